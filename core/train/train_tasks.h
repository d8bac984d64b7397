#pragma once
// Training tasks generated in code (no download). Each task draws (input, output) strings over
// a small character vocabulary; the model's tokenizer is a chars tokenizer over exactly that
// vocabulary, so text a user types in the GUI or `atlas run` is tokenized as in training.
// How each architecture sees a pair (docs/training.md, "Typing a task example"):
//   decoder          input SEP output           next-token loss on the output part
//   encoder          input SEP ____ (blanks)    each blank labelled with its output character
//   encoder-decoder  source input, target <bos> output   (Model::run prepends <bos>)
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "core/config/config.h"
#include "core/tensor/random.h"
#include "core/tokenizers/tokenizer.h"
#include "core/train/train_model.h"

namespace atlas::train {

struct TaskOptions {
  int64_t length = 8;     // sequence length (digits per operand for addition: length / 2)
  std::string text_path;  // char-lm: the text file to model
};

struct Task {
  std::string name;
  std::string description;
  std::vector<std::string> vocab;  // chars tokenizer vocab; entry 0 is "<unk>"
  std::string separator;           // between input and output ("" = none, e.g. induction)
  bool decoder_only = false;       // char-lm
  // The output positions hold blanks "_" instead of the answers for every architecture, so a
  // decoder cannot read its previous answers (parity-blank: no running-parity shortcut).
  bool blank_outputs = false;
  std::function<void(Rng&, std::string& input, std::string& output)> sample;
  std::string text;                // char-lm: the file's contents
};

struct TaskListing {
  const char* name;
  const char* description;
};
const std::vector<TaskListing>& list_tasks();

// Throws AtlasError for an unknown name (suggesting the nearest) or bad options.
Task make_task(const std::string& name, const TaskOptions& options);

// Sets the tokenizer, vocab_size, bos/pad ids and max_positions of `config` for the task.
// Throws when the architecture cannot do the task (char-lm needs a decoder).
void configure_for_task(ModelConfig& config, const Task& task, int64_t length);

// The text (source, and target for encoder-decoder) a user types to pose (input, output), and
// the labels per output-position the model is trained to predict there (-1 = none).
struct TypedExample {
  std::string source;
  std::string target;
};
TypedExample typed_example(const ModelConfig& config, const Task& task, const std::string& input,
                           const std::string& output);

// One training example drawn from the task, tokenized with `tokenizer`.
Example make_example(const ModelConfig& config, const Task& task, const Tokenizer& tokenizer,
                     Rng& rng);
// The same for a given (input, output) pair.
Example encode_example(const ModelConfig& config, const Task& task, const Tokenizer& tokenizer,
                       const std::string& input, const std::string& output);

}  // namespace atlas::train
