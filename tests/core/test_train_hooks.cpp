// The training loop's module hooks (core/train/train_hooks.h) against what each source trains:
// adaptive span learns z / S and clamps z into [0, S] after every step
// (facebookresearch/adaptive-span: a learning-rate multiplier S on each learned span_z and a
// clamp), Performer never forms the probabilities attention dropout would drop, ACT's ponder
// weight is a non-negative loss weight; a vanilla model brings no hooks.
#include <catch2/catch.hpp>

#include <set>

#include "core/model/params.h"
#include "core/model/presets.h"
#include "core/train/train_hooks.h"

using namespace atlas;
using namespace atlas::train;

namespace {

std::set<std::string> hook_names(const ModelConfig& c) {
  std::set<std::string> names;
  for (const TrainHooks* h : train_hooks_for(c)) names.insert(h->name);
  return names;
}

const TrainHooks& only_hook(const ModelConfig& c) {
  const std::vector<const TrainHooks*> hooks = train_hooks_for(c);
  REQUIRE(hooks.size() == 1);
  return *hooks[0];
}

}  // namespace

TEST_CASE("each config trains with its modules' hooks and no others", "[train][hooks]") {
  CHECK(hook_names(preset_config("tiny-decoder")).empty());
  CHECK(hook_names(preset_config("tiny-shaw")).empty());
  CHECK(hook_names(preset_config("tiny-span")) == std::set<std::string>{"adaptive_span"});
  CHECK(hook_names(preset_config("tiny-span-dynamic")) == std::set<std::string>{"adaptive_span"});
  CHECK(hook_names(preset_config("tiny-performer")) == std::set<std::string>{"performer"});
  CHECK(hook_names(preset_config("tiny-ut-act")) == std::set<std::string>{"universal"});
  CHECK(hook_names(preset_config("tiny-ut-fixed")).empty());  // no ACT: no ponder cost
}

TEST_CASE("adaptive span's hooks: S times the step on every learned z, then z clamped to [0, S]",
          "[train][hooks][span]") {
  const ModelConfig c = preset_config("tiny-span");
  const int64_t S = c.adaptive_span()->max_span;
  const TrainHooks& span = only_hook(c);
  std::set<std::string> z_params;  // the oracle: every [n_heads] span parameter the config declares
  for (const ParamSpec& spec : param_specs(c))
    if (spec.name.size() > 7 && spec.name.substr(spec.name.size() - 7) == ".span_z") z_params.insert(spec.name);
  REQUIRE(z_params.size() == size_t(c.n_layers));
  REQUIRE(span.lr_multipliers);
  std::set<std::string> scaled;
  for (const auto& [name, multiplier] : span.lr_multipliers(c)) {
    CHECK(multiplier == double(S));
    scaled.insert(name);
  }
  CHECK(scaled == z_params);

  ParamsT<float> params = to_train_params<float>(init_params(c, 1));
  const std::string z = *z_params.begin();
  params[z] << -3.0f, 2.5f, float(S) + 7.0f, float(S);
  const MatT<float> other = params.at("embed.tokens");
  REQUIRE(span.after_step);
  span.after_step(c, params);
  CHECK(params.at(z)(0, 0) == 0.0f);
  CHECK(params.at(z)(0, 1) == 2.5f);
  CHECK(params.at(z)(0, 2) == float(S));
  CHECK(params.at(z)(0, 3) == float(S));
  CHECK(params.at("embed.tokens") == other);  // nothing else is touched

  ModelConfig dynamic = preset_config("tiny-span-dynamic");  // no learned z: nothing scaled
  CHECK(only_hook(dynamic).lr_multipliers(dynamic).empty());
}

TEST_CASE("Performer's and ACT's hooks refuse the options they cannot train with",
          "[train][hooks]") {
  const ModelConfig performer = preset_config("tiny-performer");
  TrainOptions o;
  CHECK_NOTHROW(only_hook(performer).check_options(performer, o));
  o.reg.attention_dropout = 0.1;
  CHECK_THROWS_WITH(only_hook(performer).check_options(performer, o),
                    Catch::Contains("Performer never forms"));

  const ModelConfig act = preset_config("tiny-ut-act");
  TrainOptions p;
  p.ponder_weight = 0.0;
  CHECK_NOTHROW(only_hook(act).check_options(act, p));
  p.ponder_weight = -0.5;
  CHECK_THROWS_WITH(only_hook(act).check_options(act, p), Catch::Contains("ponder-cost weight"));
}
