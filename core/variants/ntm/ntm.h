#pragma once
// Neural Turing Machine addressing (Graves, Wayne & Danihelka 2014; seed 004's flow diagram),
// host maths on an N x M memory. Per head and step, from the controller outputs
// (k, beta, g, s, gamma; write heads also e, a):
//   content    w_c(i) = softmax_i(beta * cos(k, M(i)))
//   gated      w_g = g w_c + (1 - g) w_{t-1}
//   shifted    w~(i) = sum_j w_g(j) s((i - j) mod N)      s over offsets -R..R (circular)
//   sharpened  w(i) = w~(i)^gamma / sum_j w~(j)^gamma
//   read       r = sum_i w(i) M(i)
//   write      M(i) <- M(i) * (1 - w(i) e) + w(i) a     (erase, then add)
// The same functions drive the model path (core/variants/ntm/ntm_model.cpp, a seeded controller) and the
// GUI panel's manual mode (ui/ntm_panel.cpp), so both show exactly these numbers.
#include <string>
#include <vector>

#include "core/tensor/tensor.h"
#include "core/model/trace.h"

namespace atlas {

// What the controller emits for one head at one step.
struct NtmHeadControls {
  RowVec key;         // k [M]
  float beta = 1.0f;  // key strength, >= 0
  float gate = 1.0f;  // g in [0, 1]: 1 = content only, 0 = previous weights only
  RowVec shift;       // s [2R + 1], weight of offsets -R..R; entries >= 0, summing to 1
  float gamma = 1.0f; // sharpening, >= 1
  RowVec erase;       // e [M] in [0, 1] (write heads only)
  RowVec add;         // a [M] (write heads only)
};

// The four stages of seed 004's Fig. 12 for one head at one step, each [N].
struct NtmAddressing {
  RowVec content, gated, shifted, sharpened;
};

RowVec ntm_content_weights(const Mat& memory, const RowVec& key, float beta);
RowVec ntm_interpolate(const RowVec& content, const RowVec& previous, float gate);
RowVec ntm_shift(const RowVec& weights, const RowVec& shift);
RowVec ntm_sharpen(const RowVec& weights, float gamma);
NtmAddressing ntm_address(const Mat& memory, const NtmHeadControls& c, const RowVec& previous);
RowVec ntm_read(const Mat& memory, const RowVec& weights);                    // [M]
void ntm_write(Mat& memory, const RowVec& weights, const RowVec& erase, const RowVec& add);

// Checks sizes and ranges of hand-given controls; `where` names them in the message
// (e.g. "step 3, head write0").
void check_ntm_controls(const NtmHeadControls& c, int64_t width, bool write, const std::string& where);

struct NtmHeadSpec {
  std::string name;  // "read0", "write0", ...
  bool write = false;
};

struct NtmStep {
  std::vector<NtmHeadControls> controls;   // per head
  std::vector<NtmAddressing> addressing;   // per head
  std::vector<RowVec> reads;               // per read head, [M], read from M_{t-1}
};

struct NtmRun {
  std::vector<NtmHeadSpec> heads;
  std::vector<Mat> memory;     // M_0 .. M_T, each [N, M]
  std::vector<NtmStep> steps;  // T steps
};

// The machine state across steps. Every head starts from w_0 = one-hot at slot 0 (so shifts
// alone walk the memory from its first row). A step addresses every head on M_{t-1}, reads
// with the read heads, then applies the write heads' erase/add in head order.
class NtmMachine {
 public:
  NtmMachine(std::vector<NtmHeadSpec> heads, Mat memory0);
  const NtmStep& step(std::vector<NtmHeadControls> controls);
  const RowVec& previous_weights(size_t head) const { return previous_[head]; }
  const Mat& memory() const { return run_.memory.back(); }
  const NtmRun& run() const { return run_; }

 private:
  NtmRun run_;
  std::vector<RowVec> previous_;
};

// Runs hand-given controls (manual mode): steps[t][h] for head h of `heads`.
NtmRun ntm_run_controls(const std::vector<NtmHeadSpec>& heads, const Mat& memory0,
                        const std::vector<std::vector<NtmHeadControls>>& steps);

// Manual mode from JSON (docs/variants.md, "Neural Turing Machine"):
// {"memory": [[...] x N], "heads": [{"name": "read0"}, {"name": "write0", "write": true}],
//  "steps": [{"read0": {"key": [...], "beta": 5, "gate": 1, "shift": [0, 1, 0], "gamma": 1},
//             "write0": {..., "erase": [...], "add": [...]}}, ...]}
// Unknown keys and bad values fail naming the key; `origin` names the file.
NtmRun ntm_run_from_json(const std::string& json_text, const std::string& origin);

// Adds the dump arrays of a run (names in docs/variants.md):
// ntm.step<t>.<head>.{content,gated,shifted,sharpened} [N], ntm.memory [T+1, N, M],
// ntm.<head>.weights [T, N], ntm.<head>.{key,erase,add} [T, M], .beta/.gate/.gamma [T],
// .shift [T, 2R+1], ntm.<read head>.reads [T, M].
void trace_ntm_run(const NtmRun& run, Trace& trace);

}  // namespace atlas
