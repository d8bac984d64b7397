// Neural Turing Machine addressing, reads and writes (equations in ntm.h).
#include "core/variants/ntm/ntm.h"

#include <algorithm>
#include <cmath>
#include <cstdio>

#include "core/tensor/error.h"
#include "core/variants/ntm/ntm_arrays.h"

namespace atlas {

namespace {

// Cosine similarity with the norms' product floored, so an all-zero row or key scores 0
// instead of NaN (a fresh memory is often all zeros).
float cosine(const RowVec& a, const RowVec& b) {
  const double denom = std::max(double(a.norm()) * double(b.norm()), 1e-8);
  return static_cast<float>(double(a.dot(b)) / denom);
}

std::string num(float v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%g", double(v));
  return buf;
}

Tensor tensor_of_rows(const std::vector<RowVec>& rows, int64_t width) {
  Tensor t({static_cast<int64_t>(rows.size()), width});
  for (size_t r = 0; r < rows.size(); ++r)
    std::copy(rows[r].data(), rows[r].data() + width, t.data.begin() + int64_t(r) * width);
  return t;
}

Tensor tensor_of_row(const RowVec& row) {
  Tensor t({static_cast<int64_t>(row.size())});
  std::copy(row.data(), row.data() + row.size(), t.data.begin());
  return t;
}

}  // namespace

RowVec ntm_content_weights(const Mat& memory, const RowVec& key, float beta) {
  const int64_t n = memory.rows();
  std::vector<double> score(static_cast<size_t>(n));
  double mx = -INFINITY;
  for (int64_t i = 0; i < n; ++i) {
    score[size_t(i)] = double(beta) * cosine(key, memory.row(i));
    mx = std::max(mx, score[size_t(i)]);
  }
  double z = 0;
  for (double& s : score) z += (s = std::exp(s - mx));
  RowVec w(n);
  for (int64_t i = 0; i < n; ++i) w[i] = static_cast<float>(score[size_t(i)] / z);
  return w;
}

RowVec ntm_interpolate(const RowVec& content, const RowVec& previous, float gate) {
  return gate * content + (1.0f - gate) * previous;
}

RowVec ntm_shift(const RowVec& w, const RowVec& shift) {
  const int64_t n = w.size(), range = (shift.size() - 1) / 2;
  RowVec out = RowVec::Zero(n);
  for (int64_t i = 0; i < n; ++i)
    for (int64_t k = 0; k < shift.size(); ++k) {
      const int64_t offset = k - range;  // w~(i) += w(i - offset) s(offset)
      const int64_t j = (((i - offset) % n) + n) % n;
      out[i] += w[j] * shift[k];
    }
  return out;
}

RowVec ntm_sharpen(const RowVec& w, float gamma) {
  RowVec p(w.size());
  double z = 0;
  for (int64_t i = 0; i < w.size(); ++i) {
    p[i] = static_cast<float>(std::pow(double(std::max(w[i], 0.0f)), double(gamma)));
    z += p[i];
  }
  // All-zero weights (a zero shift kernel) stay zero rather than dividing by zero.
  if (z > 0) p /= static_cast<float>(z);
  return p;
}

NtmAddressing ntm_address(const Mat& memory, const NtmHeadControls& c, const RowVec& previous) {
  NtmAddressing a;
  a.content = ntm_content_weights(memory, c.key, c.beta);
  a.gated = ntm_interpolate(a.content, previous, c.gate);
  a.shifted = ntm_shift(a.gated, c.shift);
  a.sharpened = ntm_sharpen(a.shifted, c.gamma);
  return a;
}

RowVec ntm_read(const Mat& memory, const RowVec& w) { return w * memory; }

void ntm_write(Mat& memory, const RowVec& w, const RowVec& erase, const RowVec& add) {
  for (int64_t i = 0; i < memory.rows(); ++i) {
    memory.row(i) = memory.row(i).cwiseProduct(RowVec::Ones(erase.size()) - w[i] * erase);
    memory.row(i) += w[i] * add;
  }
}

void check_ntm_controls(const NtmHeadControls& c, int64_t width, bool write, const std::string& where) {
  auto fail = [&](const std::string& what) { throw AtlasError(where + ": " + what); };
  if (c.key.size() != width)
    fail("key has " + std::to_string(c.key.size()) + " entries, the memory width is " +
         std::to_string(width));
  if (!c.key.allFinite()) fail("key must be finite");
  if (!(c.beta >= 0.0f) || !std::isfinite(c.beta)) fail("beta must be a finite number >= 0, got " + num(c.beta));
  if (!(c.gate >= 0.0f && c.gate <= 1.0f)) fail("gate must be in [0, 1], got " + num(c.gate));
  if (!(c.gamma >= 1.0f) || !std::isfinite(c.gamma)) fail("gamma must be a finite number >= 1, got " + num(c.gamma));
  if (c.shift.size() % 2 != 1)
    fail("shift must have an odd number of entries (offsets -R..R), got " + std::to_string(c.shift.size()));
  double sum = 0;
  for (float s : c.shift) {
    if (!(s >= 0.0f) || !std::isfinite(s)) fail("shift entries must be finite and >= 0, got " + num(s));
    sum += s;
  }
  if (std::abs(sum - 1.0) > 1e-3) fail("shift must sum to 1, sums to " + num(float(sum)));
  if (!write) {
    if (c.erase.size() || c.add.size()) fail("erase/add are for write heads only");
    return;
  }
  if (c.erase.size() != width || c.add.size() != width)
    fail("erase and add need " + std::to_string(width) + " entries each (the memory width)");
  for (float e : c.erase)
    if (!(e >= 0.0f && e <= 1.0f)) fail("erase entries must be in [0, 1], got " + num(e));
  if (!c.add.allFinite()) fail("add must be finite");
}

NtmMachine::NtmMachine(std::vector<NtmHeadSpec> heads, Mat memory0) {
  if (heads.empty()) throw AtlasError("an NTM needs at least one head");
  if (memory0.rows() < 1 || memory0.cols() < 1) throw AtlasError("the NTM memory is empty");
  run_.heads = std::move(heads);
  run_.memory.push_back(std::move(memory0));
  RowVec w0 = RowVec::Zero(run_.memory[0].rows());
  w0[0] = 1.0f;
  previous_.assign(run_.heads.size(), w0);
}

const NtmStep& NtmMachine::step(std::vector<NtmHeadControls> controls) {
  if (controls.size() != run_.heads.size())
    throw AtlasError("NTM step has controls for " + std::to_string(controls.size()) + " heads, the machine has " +
                     std::to_string(run_.heads.size()));
  const Mat& before = run_.memory.back();  // M_{t-1}
  NtmStep s;
  for (size_t h = 0; h < run_.heads.size(); ++h) {
    s.addressing.push_back(ntm_address(before, controls[h], previous_[h]));
    if (!run_.heads[h].write) s.reads.push_back(ntm_read(before, s.addressing[h].sharpened));
  }
  Mat after = before;
  for (size_t h = 0; h < run_.heads.size(); ++h) {
    previous_[h] = s.addressing[h].sharpened;
    if (run_.heads[h].write) ntm_write(after, s.addressing[h].sharpened, controls[h].erase, controls[h].add);
  }
  s.controls = std::move(controls);
  run_.memory.push_back(std::move(after));
  run_.steps.push_back(std::move(s));
  return run_.steps.back();
}

NtmRun ntm_run_controls(const std::vector<NtmHeadSpec>& heads, const Mat& memory0,
                        const std::vector<std::vector<NtmHeadControls>>& steps) {
  NtmMachine m(heads, memory0);
  for (size_t t = 0; t < steps.size(); ++t) {
    if (steps[t].size() != heads.size())
      throw AtlasError("step " + std::to_string(t) + " has controls for " + std::to_string(steps[t].size()) +
                       " heads, expected " + std::to_string(heads.size()));
    for (size_t h = 0; h < heads.size(); ++h)
      check_ntm_controls(steps[t][h], memory0.cols(), heads[h].write,
                         "step " + std::to_string(t) + ", head " + heads[h].name);
    m.step(steps[t]);
  }
  return m.run();
}

void trace_ntm_run(const NtmRun& run, Trace& trace) {
  const int64_t T = static_cast<int64_t>(run.steps.size());
  const int64_t N = run.memory[0].rows(), M = run.memory[0].cols();
  for (int64_t t = 0; t < T; ++t) {
    const NtmStep& s = run.steps[size_t(t)];
    for (size_t h = 0; h < run.heads.size(); ++h) {
      const std::string& head = run.heads[h].name;
      const NtmAddressing& a = s.addressing[h];
      trace.add(ntm_arrays::step_array(t, head, "content"), "content weights softmax(beta cos(k, M_i)) [N]",
                tensor_of_row(a.content));
      trace.add(ntm_arrays::step_array(t, head, "gated"), "interpolated weights g w_c + (1 - g) w_prev [N]",
                tensor_of_row(a.gated));
      trace.add(ntm_arrays::step_array(t, head, "shifted"), "after the circular shift convolution [N]",
                tensor_of_row(a.shifted));
      trace.add(ntm_arrays::step_array(t, head, "sharpened"), "final weights w~^gamma / sum [N]",
                tensor_of_row(a.sharpened));
    }
  }
  Tensor mem({T + 1, N, M});
  for (int64_t t = 0; t <= T; ++t)
    std::copy(run.memory[size_t(t)].data(), run.memory[size_t(t)].data() + N * M, mem.data.begin() + t * N * M);
  trace.add(ntm_arrays::kMemory, "memory before step 0 and after every step [T+1, N, M]", std::move(mem));
  size_t read_index = 0;
  for (size_t h = 0; h < run.heads.size(); ++h) {
    auto p = [&](const char* what) { return ntm_arrays::head_array(run.heads[h].name, what); };
    std::vector<RowVec> weights, keys, shifts, erase, add, reads;
    Tensor beta({T}), gate({T}), gamma({T});
    for (int64_t t = 0; t < T; ++t) {
      const NtmStep& s = run.steps[size_t(t)];
      const NtmHeadControls& c = s.controls[h];
      weights.push_back(s.addressing[h].sharpened);
      keys.push_back(c.key);
      shifts.push_back(c.shift);
      beta.data[size_t(t)] = c.beta;
      gate.data[size_t(t)] = c.gate;
      gamma.data[size_t(t)] = c.gamma;
      if (run.heads[h].write) {
        erase.push_back(c.erase);
        add.push_back(c.add);
      } else {
        reads.push_back(s.reads[read_index]);
      }
    }
    const int64_t S = shifts.empty() ? 1 : shifts[0].size();
    trace.add(p("weights"), std::string(run.heads[h].write ? "write" : "read") + " weights per step [T, N]",
              tensor_of_rows(weights, N));
    trace.add(p("key"), "key k per step [T, M]", tensor_of_rows(keys, M));
    trace.add(p("beta"), "key strength beta per step [T]", std::move(beta));
    trace.add(p("gate"), "interpolation gate g per step [T]", std::move(gate));
    trace.add(p("shift"), "shift weights over offsets -R..R per step [T, 2R+1]", tensor_of_rows(shifts, S));
    trace.add(p("gamma"), "sharpening gamma per step [T]", std::move(gamma));
    if (run.heads[h].write) {
      trace.add(p("erase"), "erase vector e per step [T, M]", tensor_of_rows(erase, M));
      trace.add(p("add"), "add vector a per step [T, M]", tensor_of_rows(add, M));
    } else {
      trace.add(p("reads"), "read vector r = sum_i w(i) M(i) per step [T, M]", tensor_of_rows(reads, M));
      ++read_index;
    }
  }
}

}  // namespace atlas
