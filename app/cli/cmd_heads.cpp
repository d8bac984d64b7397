// atlas heads: head statistics (core/analysis/head_statistics.h) of every
// self-attention map: a table, or CSV / JSON / .npy for scripts.
#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <sstream>

#include "app/cli/commands.h"
#include "app/cli/output_file.h"
#include "core/analysis/head_statistics.h"
#include "core/analysis/weight_check.h"
#include "core/formats/atomic_file.h"
#include "core/formats/input_file.h"
#include "core/formats/model_io.h"
#include "core/formats/npy.h"
#include "core/tensor/error.h"

namespace atlas::cli {
namespace {

const char* kHeadsUsage =
    "usage: atlas heads MODEL (--text S | --text-file F | --induction-probe N) [--target S]\n"
    "                   [--seed N] [--csv FILE | --json | --npy DIR] [--top K]\n"
    "  What each attention head does, per self-attention map (layer, step, segment) and head:\n"
    "    entropy          mean entropy of a query's attention (nats)\n"
    "    distance         mean attention distance |i - j| (tokens)\n"
    "    sink             mean weight on the first key (attention sink)\n"
    "    previous_token   mean weight on the previous token\n"
    "    duplicate_token  mean weight on earlier copies of the query's token\n"
    "    induction        mean weight on the tokens that followed earlier copies of the query's\n"
    "                     token (formulas: docs/head-statistics.md)\n"
    "  --target S       the decoder input of an encoder-decoder model\n"
    "  --induction-probe N  run on N random token ids repeated twice (TransformerLens's probe for\n"
    "                   induction heads; the model's BOS first when it has one) instead of a text\n"
    "  --csv FILE       one row per head; --json: the same on stdout; --npy DIR: one\n"
    "                   [layers, heads] float32 array per map family and statistic\n"
    "  --top K          the K highest heads of each statistic (default 3) after the table\n";

std::vector<TokenInfo> probe_tokens(const Model& model, int64_t n, uint64_t seed) {
  const ModelConfig& c = model.config();
  // Ids below the tokenizer's ordinary symbols would be special tokens: draw from the
  // vocabulary's upper part when a BOS/pad/unk id sits low.
  int32_t first = 0;
  for (int64_t special : {c.bos_id, c.pad_id}) first = std::max<int32_t>(first, int32_t(special + 1));
  const int32_t vocab = static_cast<int32_t>(std::min<int64_t>(c.vocab_size, model.tokenizer().vocab_size()));
  std::vector<TokenInfo> tokens;
  if (c.bos_id >= 0) tokens.push_back({int32_t(c.bos_id), "<bos>"});
  for (int32_t id : induction_probe_tokens(n, first, vocab, seed))
    tokens.push_back({id, model.tokenizer().label(id)});
  return tokens;
}

void write_statistics_csv(const std::string& path, const std::vector<HeadStatisticsRow>& rows) {
  std::ostringstream out;
  out << "map,stack,sublayer,layer,segment,step,head";
  for (int s = 0; s < kHeadStatisticCount; ++s) out << ',' << head_statistic_name(HeadStatistic(s));
  out << '\n';
  out.precision(9);
  for (const auto& r : rows) {
    out << attention_array_name(r.map) << ',' << r.map.stack << ',' << r.map.sublayer << ','
        << r.map.layer << ',' << r.map.segment << ',' << r.map.step << ',' << r.head;
    for (double v : r.value) out << ',' << v;
    out << '\n';
  }
  write_file_atomically(path, out.str());
}

nlohmann::json statistics_json(const std::vector<HeadStatisticsRow>& rows) {
  nlohmann::json out = nlohmann::json::array();
  for (const auto& r : rows) {
    nlohmann::json j = {{"map", attention_array_name(r.map)},
                        {"stack", r.map.stack},
                        {"sublayer", r.map.sublayer},
                        {"layer", r.map.layer},
                        {"segment", r.map.segment},
                        {"step", r.map.step},
                        {"head", r.head}};
    for (int s = 0; s < kHeadStatisticCount; ++s) j[head_statistic_name(HeadStatistic(s))] = r.value[s];
    out.push_back(j);
  }
  return out;
}

// One [layers, heads] array per family and statistic (head_statistics_families).
void write_npy_dir(const std::string& dir, const std::vector<HeadStatisticsRow>& rows) {
  std::filesystem::create_directories(dir);
  for (const HeadStatisticsFamily& f : head_statistics_families(rows))
    for (int s = 0; s < kHeadStatisticCount; ++s) {
      Tensor t({f.layers, f.heads});
      std::copy(f.table[s].begin(), f.table[s].end(), t.data.begin());
      write_npy((std::filesystem::path(dir) / (f.name + "." + head_statistic_name(HeadStatistic(s)) + ".npy")).string(),
                t, DType::F32);
    }
}

}  // namespace

int cmd_heads(const std::vector<std::string>& args) {
  if (wants_help(args, kHeadsUsage)) return 0;
  Args a(args, {{"--text", "--text-file", "--induction-probe", "--target", "--seed", "--csv", "--npy", "--top"}, {"--json"}});
  if (a.positionals().size() != 1) throw AtlasError("heads takes one MODEL (see atlas heads --help)");
  const int inputs = int(a.has("--text")) + int(a.has("--text-file")) + int(a.has("--induction-probe"));
  if (inputs != 1) throw AtlasError("heads needs exactly one of --text, --text-file, --induction-probe");
  if (int(a.has("--csv")) + int(a.has("--json")) + int(a.has("--npy")) > 1)
    throw AtlasError("heads writes one of --csv, --json, --npy");
  if (auto f = a.get("--csv")) check_output_file("--csv", *f);
  const int64_t top = a.get_int("--top", 3, 0, 1000);
  const Model model = load_model(a.positionals()[0]);
  for (const auto& w : model.warnings()) std::fprintf(stderr, "warning: %s\n", printable(w).c_str());
  for (const auto& w : weight_warnings(model)) std::fprintf(stderr, "warning: %s\n", printable(w).c_str());
  RunOptions options;
  options.trace = TraceOptions::none();
  options.trace.attention = true;
  RunResult run;
  if (a.has("--induction-probe")) {
    if (model.config().architecture == Architecture::EncoderDecoder)
      throw AtlasError("--induction-probe runs one token sequence; an encoder-decoder model needs --text and --target");
    const int64_t n = a.get_int("--induction-probe", 0, 2, (model.config().max_positions - 1) / 2);
    const uint64_t seed = static_cast<uint64_t>(a.get_int("--seed", 0, 0, INT64_MAX));
    run = model.forward(probe_tokens(model, n, seed), {}, options);
  } else {
    const std::string text = a.has("--text") ? a.require("--text")
                                             : read_input_file(a.require("--text-file"), InputKind::Text);
    run = model.run(text, a.get_or("--target", ""), options);
  }
  const std::vector<HeadStatisticsRow> rows = head_statistics(run.trace);
  if (rows.empty()) throw AtlasError("heads: the model traced no self-attention maps to measure");
  if (auto f = a.get("--csv")) {
    write_statistics_csv(*f, rows);
    std::printf("wrote %zu heads to %s\n", rows.size(), f->c_str());
    return 0;
  }
  if (a.has("--json")) {
    std::printf("%s\n", statistics_json(rows).dump(1).c_str());
    return 0;
  }
  if (auto dir = a.get("--npy")) {
    write_npy_dir(*dir, rows);
    std::printf("wrote %d arrays per map family to %s\n", kHeadStatisticCount, dir->c_str());
    return 0;
  }
  std::printf("%-28s %4s", "map", "head");
  for (int s = 0; s < kHeadStatisticCount; ++s) std::printf(" %15s", head_statistic_name(HeadStatistic(s)));
  std::printf("\n");
  for (const auto& r : rows) {
    std::printf("%-28s %4lld", attention_array_name(r.map).c_str(), (long long)r.head);
    for (double v : r.value) std::printf(" %15.4f", v);
    std::printf("\n");
  }
  for (int s = 0; s < kHeadStatisticCount && top > 0; ++s) {
    std::vector<const HeadStatisticsRow*> order;
    for (const auto& r : rows) order.push_back(&r);
    std::stable_sort(order.begin(), order.end(), [s](auto* x, auto* y) { return x->value[s] > y->value[s]; });
    std::printf("\nhighest %s:", head_statistic_name(HeadStatistic(s)));
    for (int64_t k = 0; k < top && k < int64_t(order.size()); ++k)
      std::printf("  %s head %lld (%.3f)", attention_array_name(order[size_t(k)]->map).c_str(),
                  (long long)order[size_t(k)]->head, order[size_t(k)]->value[s]);
    std::printf("\n");
  }
  return 0;
}

}  // namespace atlas::cli
