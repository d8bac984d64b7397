// The rule both forwards dispatch on (core/model/stack_route.h), against what each stack kind
// is in its paper: the Universal Transformer repeats one shared block (Dehghani et al. 2019),
// Transformer-XL runs segments over a memory (Dai et al. 2019), the reversible stack is a
// Transformer stack with other residuals (Kitaev et al. 2020), so it follows the
// architecture, and the recurrent seq2seq, NTM, SAGAN and SNAIL are whole models of their own
// (seed 004); the standard stacks are seed 002's encoder, decoder or both.
#include <catch2/catch.hpp>

#include "core/model/stack_route.h"

using namespace atlas;

TEST_CASE("each stack kind routes the forward as its paper builds the model", "[stack-route]") {
  using R = StackRoute;
  struct Row {
    const char* what;
    StackKind kind;
    Architecture architecture;
    R route;
  };
  const Row rows[] = {
      {"standard encoder", StandardStack{}, Architecture::Encoder, R::Encoder},
      {"standard decoder", StandardStack{}, Architecture::Decoder, R::Decoder},
      {"standard encoder-decoder", StandardStack{}, Architecture::EncoderDecoder,
       R::EncoderDecoder},
      {"reversible encoder", ReversibleConfig{}, Architecture::Encoder, R::Encoder},
      {"reversible decoder", ReversibleConfig{}, Architecture::Decoder, R::Decoder},
      {"Universal Transformer, encoder", UniversalConfig{}, Architecture::Encoder, R::Universal},
      {"Universal Transformer, decoder", UniversalConfig{}, Architecture::Decoder, R::Universal},
      {"Transformer-XL", XLConfig{}, Architecture::Decoder, R::Xl},
      {"recurrent seq2seq", Seq2SeqConfig{}, Architecture::EncoderDecoder, R::HostModel},
      {"NTM", NtmConfig{}, Architecture::Decoder, R::HostModel},
      {"SAGAN", SaganConfig{}, Architecture::Encoder, R::HostModel},
      {"SNAIL", SnailConfig{}, Architecture::Decoder, R::HostModel},
  };
  for (const Row& r : rows) {
    INFO(r.what);
    ModelConfig c;
    c.stack = r.kind;
    c.architecture = r.architecture;
    CHECK(stack_route(c) == r.route);
  }
}
