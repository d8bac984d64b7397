// erfc in float32 without a library erf (GLSL has none), for GELU (erf form).
//
// Pieces (approximation error in exact arithmetic, measured against double erf/erfc on a
// grid of 2e4 points per piece):
//  |x| < 1   erf(x) = x * sum_{n<=11} c_n x^(2n), c_n = 2/sqrt(pi) (-1)^n / (n! (2n+1))
//            (Maclaurin series; truncation error <= 2/sqrt(pi) / (12! 25) = 9.4e-11)
//  1<=|x|<4  erfc(|x|) = exp(-x^2) f(|x|), f(a) = exp(a^2) erfc(a) as a degree-14 Chebyshev
//            series on [1, 4] (interpolation at Chebyshev nodes); relative error of f
//            <= 2.0e-10, absolute error of erfc <= 2.1e-11.
//  |x| >= 4  erfc(a) = exp(-a^2) / (a sqrt(pi)) (1 - 1/(2a^2) + 3/(4a^4)); relative error
//            <= 15/(8 a^6) = 4.6e-4 of a value below 1.6e-8, i.e. < 1e-11 absolute.
// So the formula is within 1e-10 of erfc everywhere; float32 rounding (and the driver's exp,
// which Vulkan allows 3 + 2|x| ulp) dominates the result, see tests/gpu for the bound.
#ifndef ATLAS_ERF_GLSL
#define ATLAS_ERF_GLSL

float erf_series(float x) {  // |x| < 1
  const float z = x * x;
  float p = -1.229055530e-09;
  p = p * z + 1.480719282e-08;
  p = p * z - 1.636584469e-07;
  p = p * z + 1.646211437e-06;
  p = p * z - 1.492565036e-05;
  p = p * z + 1.205533298e-04;
  p = p * z - 8.548327023e-04;
  p = p * z + 5.223977625e-03;
  p = p * z - 2.686617065e-02;
  p = p * z + 1.128379167e-01;
  p = p * z - 3.761263890e-01;
  p = p * z + 1.128379167e+00;
  return x * p;
}

// exp(a^2) erfc(a) for 1 <= a <= 4 by Clenshaw's recurrence (stable in float).
float erfcx_cheb(float a) {
  const float c[15] = float[15](
      2.444257528e-01, -1.358986289e-01, 3.563511415e-02, -8.884098618e-03, 2.118423998e-03,
      -4.853987641e-04, 1.072737545e-04, -2.293663448e-05, 4.756874691e-06, -9.589944825e-07,
      1.882900638e-07, -3.606317562e-08, 6.747413398e-09, -1.233773023e-09, 2.146130264e-10);
  const float t = (2.0 * a - 5.0) / 3.0;  // [1, 4] -> [-1, 1]
  float b1 = 0.0, b2 = 0.0;
  for (int j = 14; j >= 1; --j) {
    const float b0 = 2.0 * t * b1 - b2 + c[j];
    b2 = b1;
    b1 = b0;
  }
  return t * b1 - b2 + c[0];
}

float erfc_approx(float x) {
  const float a = abs(x);
  if (a < 1.0) return 1.0 - erf_series(x);  // erfc in (0.157, 1.843): no cancellation
  float tail;  // erfc(a)
  if (a < 4.0) {
    tail = exp(-a * a) * erfcx_cheb(a);
  } else {
    const float inv2 = 1.0 / (a * a);
    tail = exp(-a * a) * (0.5641895835 / a) * (1.0 - 0.5 * inv2 + 0.75 * inv2 * inv2);
  }
  return x > 0.0 ? tail : 2.0 - tail;
}

// GELU(x) = x Phi(x) = 0.5 x erfc(-x / sqrt(2)); the erfc form stays accurate for x << 0,
// where 1 + erf(x / sqrt(2)) would cancel.
float gelu_erf(float x) { return 0.5 * x * erfc_approx(-0.7071067811865476 * x); }

// tanh from exp(-2|u|) in (0, 1]: never overflows, unlike (e^2u - 1) / (e^2u + 1).
float tanh_safe(float u) {
  const float e = exp(-2.0 * abs(u));
  const float r = (1.0 - e) / (1.0 + e);
  return u < 0.0 ? -r : r;
}

float gelu_tanh(float x) {
  return 0.5 * x * (1.0 + tanh_safe(0.7978845608028654 * (x + 0.044715 * x * x * x)));
}
#endif
