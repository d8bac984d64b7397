#pragma once
// Optimisation pieces of seed 002's recipe: Adam (beta1 0.9, beta2 0.98, eps 1e-9), the
// warm-up learning-rate schedule lr = d^-0.5 * min(step^-0.5, step * warmup^-1.5), gradient
// clipping by global norm, and DropHead's V-shaped rate schedule (Zhou et al. 2020).
#include <cstdint>
#include <map>
#include <string>

#include "core/train/train_tape.h"

namespace atlas::train {

struct AdamOptions {
  double beta1 = 0.9;
  double beta2 = 0.98;
  double eps = 1e-9;
};

// Adam (Kingma & Ba) with bias correction; moments kept per parameter name.
class Adam {
 public:
  explicit Adam(AdamOptions options = {}) : o_(options) {}
  // One update of every parameter that has a gradient. step_number counts from 1.
  void update(ParamsT<float>& params, const ParamsT<float>& grads, double lr);
  int64_t steps() const { return t_; }
  // Scales the step of one parameter: Adam on z is then Adam on z / multiplier (a module's
  // learning-rate multiplier, core/train/train_hooks.h).
  void set_lr_multiplier(const std::string& name, double multiplier) { mult_[name] = multiplier; }
  void set_state(int64_t steps, ParamsT<float> m, ParamsT<float> v);
  const ParamsT<float>& first_moments() const { return m_; }
  const ParamsT<float>& second_moments() const { return v_; }

 private:
  AdamOptions o_;
  int64_t t_ = 0;
  ParamsT<float> m_, v_;
  std::map<std::string, double> mult_;
};

enum class ScheduleKind { Warmup, Constant };

struct Schedule {
  ScheduleKind kind = ScheduleKind::Warmup;
  double lr = 1.0;         // Warmup: a multiplier of seed 002's formula; Constant: the rate
  int64_t warmup = 4000;   // Warmup: steps of linear increase
  int64_t d_model = 512;
  double at(int64_t step) const;  // step >= 1
};

// Scales every gradient by max_norm / norm when the global L2 norm exceeds max_norm (> 0).
// Returns the norm before clipping.
double clip_global_norm(ParamsT<float>& grads, double max_norm);

// DropHead's scheduled rate: p at step 0 falling linearly to 0 at `warmup`, then rising
// linearly back to p at `total` (p_start = p_end, as the source document says).
double drop_head_rate(double p, int64_t step, int64_t warmup, int64_t total);

ScheduleKind parse_schedule_kind(const std::string& name);  // "warmup" | "constant"
std::string schedule_kind_name(ScheduleKind kind);

}  // namespace atlas::train
