// Rotary positions as the forwards' positions on queries and keys (core/model/qk_positions.h):
// one table of angles per sequence length, made once per forward (every layer reuses it), on the
// host for the trace and the training tape, on the backend for the inference rotation.
#include <map>
#include <sstream>

#include "core/model/model_arrays.h"
#include "core/model/qk_positions.h"
#include "core/model/trace.h"
#include "core/variants/rotary/rope.h"
#include "core/variants/rotary/train_rope.h"

namespace atlas {

namespace {

class RotaryPositions final : public QkPositions {
 public:
  explicit RotaryPositions(const ModelConfig& c) : c_(c), args_(rope_args(c)) {}

  DTensor apply(Backend& be, const DTensor& x, int heads, int64_t first) override {
    const int64_t n = x.shape.at(0);
    const DTensor& table = device_table(be, first + n);
    return apply_rope(be, x, first > 0 ? be.slice_rows(table, first, n) : table, args_for(heads));
  }
  int apply(train::Tape<float>& t, int x, int heads) override { return on_tape(t, x, heads); }
  int apply(train::Tape<double>& t, int x, int heads) override { return on_tape(t, x, heads); }

  void trace(Trace& trace, const std::string& name, int64_t first, int64_t length) override {
    const HostTable& table = host_table(first + length);
    trace.add(name, "RoPE rotation table [L, r]: cos(p w_i) for i < r/2, then sin(p w_i)",
              first > 0 ? rope_table(table.frequencies, first, length) : table.angles);
    Tensor f({static_cast<int64_t>(table.frequencies.size())});
    f.data.assign(table.frequencies.begin(), table.frequencies.end());
    trace.add(model_arrays::frequencies_of(name),
              "RoPE frequencies w_i (radians per position) [r/2]", std::move(f));
  }

 private:
  struct HostTable {
    std::vector<float> frequencies;  // rope_frequencies of the length
    Tensor angles;                   // rope_table of positions 0..length-1
  };

  RopeArgs args_for(int heads) const {
    RopeArgs a = args_;
    a.heads = heads;
    return a;
  }

  const HostTable& host_table(int64_t length) {
    auto it = host_.find(length);
    if (it == host_.end()) {
      HostTable t;
      t.frequencies = rope_frequencies(c_, length);
      t.angles = rope_table(t.frequencies, 0, length);
      it = host_.emplace(length, std::move(t)).first;
    }
    return it->second;
  }

  const DTensor& device_table(Backend& be, int64_t length) {
    if (device_backend_ != &be) {  // tensors of another backend are of no use
      device_.clear();
      device_backend_ = &be;
    }
    auto it = device_.find(length);
    if (it == device_.end())
      it = device_.emplace(length, be.upload(host_table(length).angles)).first;
    return it->second;
  }

  template <class S>
  int on_tape(train::Tape<S>& t, int x, int heads) {
    return train::rope(t, x, host_table(t.value(x).rows()).angles, args_for(heads));
  }

  const ModelConfig& c_;
  const RopeArgs args_;
  std::map<int64_t, HostTable> host_;
  std::map<int64_t, DTensor> device_;
  const Backend* device_backend_ = nullptr;
};

std::string describe_rotary(const ModelConfig& c) {
  std::ostringstream s;
  s << "rotary (RoPE, theta " << double(c.rope.theta) << ", " << rope_rotary_dims(c) << " of "
    << c.d_head() << " dims per head)";
  return s.str();
}

}  // namespace

namespace variants {

std::vector<const QkPositionsModule*> rotary_qk_positions() {
  static const QkPositionsModule rotary{
      "rotary", [](const ModelConfig& c) { return c.positional == Positional::Rotary; },
      [](const ModelConfig& c) -> std::unique_ptr<QkPositions> {
        return std::make_unique<RotaryPositions>(c);
      },
      describe_rotary};
  return {&rotary};
}

}  // namespace variants

}  // namespace atlas
