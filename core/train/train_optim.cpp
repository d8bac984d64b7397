#include "core/train/train_optim.h"

#include <cmath>

#include "core/tensor/error.h"

namespace atlas::train {

void Adam::update(ParamsT<float>& params, const ParamsT<float>& grads, double lr) {
  ++t_;
  // Bias corrections in double: 0.98^t underflows float's precision early.
  const double c1 = 1.0 - std::pow(o_.beta1, static_cast<double>(t_));
  const double c2 = 1.0 - std::pow(o_.beta2, static_cast<double>(t_));
  const float b1 = static_cast<float>(o_.beta1), b2 = static_cast<float>(o_.beta2);
  const float step = static_cast<float>(lr / c1);
  const float inv_sqrt_c2 = static_cast<float>(1.0 / std::sqrt(c2));
  const float eps = static_cast<float>(o_.eps);
  for (auto& [name, p] : params) {
    auto g = grads.find(name);
    if (g == grads.end()) continue;
    auto& m = m_[name];
    auto& v = v_[name];
    if (m.size() == 0) {
      m = MatT<float>::Zero(p.rows(), p.cols());
      v = MatT<float>::Zero(p.rows(), p.cols());
    }
    m = b1 * m + (1.0f - b1) * g->second;
    v = b2 * v + (1.0f - b2) * g->second.cwiseAbs2();
    // p -= lr * m_hat / (sqrt(v_hat) + eps)
    auto mult = mult_.find(name);
    const float s = mult == mult_.end() ? step : static_cast<float>(step * mult->second);
    p.array() -= s * m.array() / ((v.array().sqrt() * inv_sqrt_c2) + eps);
  }
}

void Adam::set_state(int64_t steps, ParamsT<float> m, ParamsT<float> v) {
  t_ = steps;
  m_ = std::move(m);
  v_ = std::move(v);
}

double Schedule::at(int64_t step) const {
  if (step < 1) step = 1;
  if (kind == ScheduleKind::Constant) return lr;
  const double s = static_cast<double>(step), w = static_cast<double>(std::max<int64_t>(1, warmup));
  return lr * std::pow(static_cast<double>(d_model), -0.5) *
         std::min(std::pow(s, -0.5), s * std::pow(w, -1.5));
}

double clip_global_norm(ParamsT<float>& grads, double max_norm) {
  double sq = 0;
  for (const auto& [name, g] : grads) sq += g.cast<double>().squaredNorm();
  const double norm = std::sqrt(sq);
  if (max_norm > 0 && norm > max_norm) {
    const float f = static_cast<float>(max_norm / norm);
    for (auto& [name, g] : grads) g *= f;
  }
  return norm;
}

double drop_head_rate(double p, int64_t step, int64_t warmup, int64_t total) {
  if (p <= 0) return 0;
  if (warmup > 0 && step < warmup) return p * (1.0 - double(step) / double(warmup));
  if (total <= warmup) return 0;
  return p * std::min(1.0, double(step - warmup) / double(total - warmup));
}

ScheduleKind parse_schedule_kind(const std::string& name) {
  if (name == "warmup" || name == "noam") return ScheduleKind::Warmup;
  if (name == "constant") return ScheduleKind::Constant;
  throw AtlasError("unknown learning-rate schedule \"" + name + "\" (use warmup or constant)");
}

std::string schedule_kind_name(ScheduleKind kind) {
  return kind == ScheduleKind::Warmup ? "warmup" : "constant";
}

}  // namespace atlas::train
