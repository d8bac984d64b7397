#include "ui/views/colormap.h"

#include <algorithm>
#include <cmath>

namespace atlas::ui {
namespace {

struct Poly6 {
  double c[7][3];  // c[k] multiplies t^k, per channel r, g, b
};

// Degree-6 least-squares fits of matplotlib's viridis and magma by Matt Zucconi (published on
// Shadertoy as "viridis/magma/inferno/plasma approximations", CC0). Seven coefficients per
// channel replace the 256-entry tables; the fit error is below 1/255 over most of [0, 1].
constexpr Poly6 kViridis = {{{0.2777273272234177, 0.005407344544966578, 0.3340998053353061},
                             {0.1050930431085774, 1.404613529898575, 1.384590162594685},
                             {-0.3308618287255563, 0.214847559468213, 0.09509516302823659},
                             {-4.634230498983486, -5.799100973351585, -19.33244095627987},
                             {6.228269936347081, 14.17993336680509, 56.69055260068105},
                             {4.776384997670288, -13.74514537774601, -65.35303263337234},
                             {-5.435455855934631, 4.645852612178535, 26.3124352495832}}};
constexpr Poly6 kMagma = {{{-0.002136485053939582, -0.000749655052795221, -0.005386127855323933},
                           {0.2516605407371642, 0.6775232436837668, 2.494026599312351},
                           {8.353717279216625, -3.577719514958484, 0.3144679030132573},
                           {-27.66873308576866, 14.26473078096533, -13.64921318813922},
                           {52.17613981234068, -27.94360607168351, 12.94416944238394},
                           {-50.76852536473588, 29.04658282127291, 4.23415299384598},
                           {18.65570506591883, -11.48977351997711, -5.601961508734096}}};

QColor evalPoly(const Poly6& p, double t) {
  double rgb[3];
  for (int ch = 0; ch < 3; ++ch) {
    double v = p.c[6][ch];
    for (int k = 5; k >= 0; --k) v = v * t + p.c[k][ch];
    rgb[ch] = std::clamp(v, 0.0, 1.0);
  }
  return QColor::fromRgbF(float(rgb[0]), float(rgb[1]), float(rgb[2]));
}

// Oklab (Björn Ottosson, 2020) <-> linear sRGB, and the sRGB transfer function.
struct Lab {
  double L, a, b;
};

double toLinear(double c) { return c <= 0.04045 ? c / 12.92 : std::pow((c + 0.055) / 1.055, 2.4); }
double fromLinear(double c) {
  c = std::clamp(c, 0.0, 1.0);
  return c <= 0.0031308 ? 12.92 * c : 1.055 * std::pow(c, 1.0 / 2.4) - 0.055;
}

Lab srgbToOklab(double r, double g, double b) {
  r = toLinear(r), g = toLinear(g), b = toLinear(b);
  double l = std::cbrt(0.4122214708 * r + 0.5363325363 * g + 0.0514459929 * b);
  double m = std::cbrt(0.2119034982 * r + 0.6806995451 * g + 0.1073969566 * b);
  double s = std::cbrt(0.0883024619 * r + 0.2817188376 * g + 0.6299787005 * b);
  return {0.2104542553 * l + 0.7936177850 * m - 0.0040720468 * s,
          1.9779984951 * l - 2.4285922050 * m + 0.4505937099 * s,
          0.0259040371 * l + 0.7827717662 * m - 0.8086757660 * s};
}

QColor oklabToSrgb(const Lab& c) {
  double l = c.L + 0.3963377774 * c.a + 0.2158037573 * c.b;
  double m = c.L - 0.1055613458 * c.a - 0.0638541728 * c.b;
  double s = c.L - 0.0894841775 * c.a - 1.2914855480 * c.b;
  l = l * l * l, m = m * m * m, s = s * s * s;
  double r = 4.0767416621 * l - 3.3077115913 * m + 0.2309699292 * s;
  double g = -1.2684380046 * l + 2.6097574011 * m - 0.3413193965 * s;
  double b = -0.0041960863 * l - 0.7034186147 * m + 1.7076147010 * s;
  return QColor::fromRgbF(float(fromLinear(r)), float(fromLinear(g)), float(fromLinear(b)));
}

// Diverging blue - near-white - red, interpolated in Oklab between end points of equal
// lightness, so both halves are straight lines in a perceptually uniform space and the two
// signs look equally strong.
QColor evalDiverging(double t) {
  static const Lab blue = srgbToOklab(0.230, 0.299, 0.754);
  static const Lab red = srgbToOklab(0.706, 0.016, 0.150);
  static const Lab mid = srgbToOklab(0.950, 0.950, 0.950);
  // Equalise the end lightness so neither sign dominates.
  static const double endL = 0.5 * (blue.L + red.L);
  const Lab& end = t < 0.5 ? blue : red;
  double u = t < 0.5 ? (0.5 - t) * 2.0 : (t - 0.5) * 2.0;  // 0 at the centre, 1 at an end
  Lab c{mid.L + (endL - mid.L) * u, mid.a + (end.a - mid.a) * u, mid.b + (end.b - mid.b) * u};
  return oklabToSrgb(c);
}

}  // namespace

QStringList colormapNames() { return {"Viridis", "Magma", "Diverging (blue-red)"}; }

QString colormapKey(Colormap cmap) {
  switch (cmap) {
    case Colormap::Magma: return "magma";
    case Colormap::Diverging: return "diverging";
    default: return "viridis";
  }
}

Colormap colormapFromKey(const QString& key) {
  if (key == "magma") return Colormap::Magma;
  if (key == "diverging") return Colormap::Diverging;
  return Colormap::Viridis;
}

QColor evaluateColormap(Colormap cmap, double t) {
  t = std::clamp(t, 0.0, 1.0);
  switch (cmap) {
    case Colormap::Magma: return evalPoly(kMagma, t);
    case Colormap::Diverging: return evalDiverging(t);
    default: return evalPoly(kViridis, t);
  }
}

QRgb categoryColor(int id) {
  if (id < 0) return qRgb(128, 128, 128);
  constexpr double kGoldenAngle = 2.399963229728653;  // radians, pi (3 - sqrt 5)
  static const double kLightness[] = {0.70, 0.52, 0.84};
  const double hue = 0.6 + id * kGoldenAngle;
  const double chroma = 0.13;
  return oklabToSrgb({kLightness[id % 3], chroma * std::cos(hue), chroma * std::sin(hue)}).rgb();
}

ColorLut::ColorLut(Colormap cmap) : m_cmap(cmap) {
  for (int i = 0; i < 256; ++i) m_table[i] = evaluateColormap(cmap, i / 255.0).rgb();
}

}  // namespace atlas::ui
