// Corpus runs and their merge (corpus_index.h).
#include "core/analysis/corpus_index.h"

#include <algorithm>
#include <charconv>
#include <chrono>
#include <filesystem>
#include <map>
#include <tuple>

#include "core/analysis/corpus_file.h"
#include "core/formats/output_folder.h"
#include "core/input/patch_input.h"
#include "core/tensor/error.h"
#include "core/tokenizers/token_budget.h"

namespace atlas {

namespace fs = std::filesystem;

namespace {

std::string shard_text(int64_t index, int64_t count) {
  return std::to_string(index) + "/" + std::to_string(count);
}

CorpusIdentity identity_of(const Model& model, const CorpusFile& file, const CorpusRunOptions& o) {
  const ModelConfig& c = model.config();
  CorpusIdentity id;
  id.model_argument = o.model_argument;
  id.model_name = c.name;
  id.model_fingerprint = model_fingerprint(model);
  const TokenizerKind k =
      c.tokenizer.kind;  // whose labels are whole words, read with spaces between
  id.token_join =
      k == TokenizerKind::Words || k == TokenizerKind::WordPiece || k == TokenizerKind::Labels
          ? "spaces"
          : "none";
  id.corpus_path = o.corpus_path;
  id.corpus_fingerprint = file.fingerprint();
  id.corpus_bytes = file.bytes();
  id.lines = file.lines();
  id.documents = int64_t(file.documents().size());
  id.settings = o.settings;
  // A --max-tokens above what the model takes is clamped (recorded here), so one script can
  // run models of different sizes.
  id.token_limit = o.settings.max_tokens > 0 ? std::min(o.settings.max_tokens, c.max_positions)
                                             : c.max_positions;
  return id;
}

// What differs between two runs' identities and splits, in the user's words ("" when none);
// `covered`: compare the shards covered too (a resume), not only the split (a merge).
std::string run_difference(const CorpusIndex& there, const CorpusIndex& here, bool covered) {
  const CorpusIdentity& a = there.identity;
  const CorpusIdentity& b = here.identity;
  auto differ = [](const std::string& what, const std::string& x, const std::string& y) {
    return what + " (" + x + " there, " + y + " here)";
  };
  if (a.model_fingerprint != b.model_fingerprint)
    return differ("another model", a.model_argument + ", " + a.model_fingerprint,
                  b.model_argument + ", " + b.model_fingerprint);
  if (a.corpus_fingerprint != b.corpus_fingerprint || a.corpus_bytes != b.corpus_bytes ||
      a.lines != b.lines)
    return differ(
        "another corpus file",
        a.corpus_path + ", " + std::to_string(a.corpus_bytes) + " bytes, " + a.corpus_fingerprint,
        b.corpus_path + ", " + std::to_string(b.corpus_bytes) + " bytes, " + b.corpus_fingerprint);
  if (a.settings.top != b.settings.top)
    return differ("another --top", std::to_string(a.settings.top), std::to_string(b.settings.top));
  if (a.settings.max_tokens != b.settings.max_tokens || a.token_limit != b.token_limit)
    return differ("another --max-tokens", std::to_string(a.settings.max_tokens),
                  std::to_string(b.settings.max_tokens));
  if (a.settings.exclude_self != b.settings.exclude_self)
    return differ("another --exclude-self", a.settings.exclude_self ? "on" : "off",
                  b.settings.exclude_self ? "on" : "off");
  if (there.shard_count != here.shard_count)
    return differ("another split into shards", std::to_string(there.shard_count) + " shards",
                  std::to_string(here.shard_count) + " shards");
  if (covered && there.shards != here.shards)
    return differ("another --shard", shard_text(there.shards.front(), there.shard_count),
                  shard_text(here.shards.front(), here.shard_count));
  return "";
}

// A resumed run's maps against the model resuming it: its layer numbers (steps, blocks) and
// heads within the model's, so the views written at the end are sized by the model, not by
// numbers from the file.
void check_maps_fit_model(const CorpusIndex& index, const ModelConfig& c, const std::string& origin) {
  const int64_t rows = attention_layer_rows(c);
  auto check = [&](const MapHead& k) {
    if (k.head >= c.n_heads)
      throw AtlasError(origin + ": " + map_name(k) + " head " + std::to_string(k.head) +
                       " is out of range: model " + c.name + " has heads 0 to " +
                       std::to_string(c.n_heads - 1));
    if (map_layer_row(k) >= rows)
      throw AtlasError(origin + ": " + map_name(k) + " is out of range: model " + c.name +
                       " has " + (k.step > 0 ? "steps 1 to " + std::to_string(rows)
                                             : "layers 0 to " + std::to_string(rows - 1)));
  };
  for (const auto& [k, row] : index.state.heads) check(k);
  for (const auto& [k, list] : index.state.links) check(k);
}

// The run held by `dir` when it is this run (a resume), else a fresh claim of `dir`.
CorpusIndex open_run_folder(const std::string& dir, const CorpusIndex& fresh, const ModelConfig& model) {
  std::error_code ec;
  if (fs::exists(fs::path(dir) / "manifest.json", ec)) {
    CorpusIndex there;
    try {
      there = read_corpus_folder(dir);
    } catch (const AtlasError& e) {
      throw AtlasError(std::string(e.what()) +
                       "; the folder cannot be resumed: remove it or give another --out");
    }
    const std::string diff = run_difference(there, fresh, true);
    if (!diff.empty())
      throw AtlasError(dir + " holds a corpus run of " + diff +
                       "; give the same arguments to resume it, or another --out");
    try {
      check_maps_fit_model(there, model, (fs::path(dir) / "manifest.json").string());
    } catch (const AtlasError& e) {
      throw AtlasError(std::string(e.what()) +
                       "; the folder cannot be resumed: remove it or give another --out");
    }
    return there;
  }
  const FolderContents c = inspect_output_folder(dir, is_corpus_folder_entry);
  if (!c.foreign.empty())
    throw AtlasError(dir + " holds \"" + c.foreign +
                     "\", which is no part of a corpus run; give a new or empty folder as --out");
  CorpusIndex claimed = fresh;
  if (c.exists) {
    remove_corpus_views(dir);
    commit_corpus_checkpoint(dir, claimed);
  } else {  // a new folder appears whole or not at all: a full disk leaves no empty folder
    replace_folder(dir, [&](const std::string& staging) { commit_corpus_checkpoint(staging, claimed); });
  }
  return claimed;
}

// One document measured into `index`, or recorded as skipped with the reason.
void measure_document(const Model& model, const CorpusDocument& d, const RunOptions& run,
                      CorpusIndex& index, CorpusRunResult& result) {
  const CorpusIdentity& id = index.identity;
  auto skip = [&](const std::string& reason) {
    index.state.add_skip(d.id, reason);
    result.skipped_now.push_back({d.id, reason});
  };
  const std::string limit =
      "the limit of " + std::to_string(id.token_limit) + " (" +
      (id.token_limit == id.settings.max_tokens ? "--max-tokens" : "the model's max_positions") +
      ")";
  const std::string text(d.text);
  try {
    check_token_budget(model.tokenizer(), text, id.token_limit, "the document");
  } catch (const AtlasError&) {
    return skip("over " + limit);
  }
  std::vector<TokenInfo> source, target;
  try {
    std::tie(source, target) = model.tokenize(text, "");
  } catch (const AtlasError& e) {
    return skip(e.what());
  }
  if (int64_t(source.size()) > id.token_limit)
    return skip(std::to_string(source.size()) + " tokens, over " + limit);
  RunResult r;
  try {
    r = model.forward(source, target, run);
  } catch (const Cancelled&) {
    throw;
  } catch (const AtlasError& e) {
    return skip(e.what());
  }
  index.state.add_document(d.id, d.text, r.trace, id.settings);
}

}  // namespace

CorpusShard parse_corpus_shard(const std::string& text, const std::string& flag) {
  auto number = [](std::string_view s, int64_t& v) {
    if (s.empty() || s.find_first_not_of("0123456789") != std::string_view::npos) return false;
    const auto r = std::from_chars(s.data(), s.data() + s.size(), v);
    return r.ec == std::errc() && r.ptr == s.data() + s.size();
  };
  CorpusShard s;
  const size_t slash = text.find('/');
  if (slash == std::string::npos || !number(std::string_view(text).substr(0, slash), s.index) ||
      !number(std::string_view(text).substr(slash + 1), s.count))
    throw AtlasError(flag + " \"" + text +
                     "\" is not K/N: shard K of N, numbered from 0 (e.g. 0/4 ... 3/4)");
  if (s.count < 1)
    throw AtlasError(flag + " " + text + ": N, the number of shards, must be at least 1");
  if (s.count > kMaxCorpusShards)
    throw AtlasError(flag + " " + text + ": N, the number of shards, must be at most " +
                     std::to_string(kMaxCorpusShards));
  if (s.index >= s.count)
    throw AtlasError(flag + " " + text + ": K must be below N (the shards of " +
                     std::to_string(s.count) + " are numbered 0 to " + std::to_string(s.count - 1) +
                     ")");
  return s;
}

std::string model_fingerprint(const Model& model) {
  const std::string config = config_to_json(model.config());
  uint64_t h = fnv1a64(config.data(), config.size());
  for (const auto& [name, t] : model.params()) {
    h = fnv1a64(name.c_str(), name.size() + 1, h);  // with its NUL: names cannot run together
    h = fnv1a64(t.shape.data(), t.shape.size() * sizeof(int64_t), h);
    if (t.packed)  // the encoded bytes (and their type) are the weight
      h = fnv1a64(t.packed->data, size_t(t.packed->bytes()), fnv1a64(&t.packed->type, 4, h));
    else
      h = fnv1a64(t.data.data(), t.data.size() * sizeof(float), h);
  }
  return fingerprint_text(h);
}

CorpusRunResult run_corpus(const Model& model, const CorpusRunOptions& o) {
  if (o.settings.top < 1 || o.settings.top > kMaxCorpusTop)
    throw AtlasError("--top " + std::to_string(o.settings.top) + ": keep from 1 to " +
                     std::to_string(kMaxCorpusTop) + " links per head");
  if (o.settings.max_tokens < 0)
    throw AtlasError("--max-tokens must be at least 1 (or 0 for the model's max_positions)");
  if (o.shard.count < 1 || o.shard.count > kMaxCorpusShards || o.shard.index < 0 ||
      o.shard.index >= o.shard.count)
    throw AtlasError("--shard " + shard_text(o.shard.index, o.shard.count) +
                     ": K must be from 0 to N - 1");
  if (is_patch_model(model.config()))
    throw AtlasError("model " + model.config().name +
                     " reads images (patches); a corpus is text, one document per line");
  const CorpusFile file(o.corpus_path);
  CorpusIndex fresh;
  fresh.identity = identity_of(model, file, o);
  fresh.shard_count = o.shard.count;
  fresh.shards = {o.shard.index};
  std::vector<const CorpusDocument*> mine;  // this shard's documents, by id
  for (const CorpusDocument& d : file.documents())
    if (d.id % o.shard.count == o.shard.index) mine.push_back(&d);
  fresh.shard_documents = int64_t(mine.size());
  CorpusIndex index = open_run_folder(o.out_dir, fresh, model.config());

  CorpusRunResult result;
  result.total = int64_t(mine.size());
  auto next = std::lower_bound(mine.begin(), mine.end(), index.next_line,
                               [](const CorpusDocument* d, int64_t line) { return d->id < line; });
  if (index.documents_done() != next - mine.begin())
    throw AtlasError(o.out_dir + "/manifest.json: counts " +
                     std::to_string(index.documents_done()) +
                     " documents done, but the shard has " + std::to_string(next - mine.begin()) +
                     " before line " + std::to_string(index.next_line) +
                     "; remove the folder or give another --out");
  result.done_before = index.documents_done();
  if (o.progress) o.progress(index.documents_done(), result.total);

  RunOptions run;
  run.trace = TraceOptions::none();
  run.trace.attention = true;
  run.cancel = o.cancel;
  auto last_checkpoint = std::chrono::steady_clock::now();
  int64_t since_checkpoint = 0;
  for (; next != mine.end(); ++next) {
    if (o.cancel && o.cancel->load()) {
      result.cancelled = true;
      break;
    }
    try {
      measure_document(model, **next, run, index, result);
    } catch (const Cancelled&) {  // inside the document: it is measured again on resume
      result.cancelled = true;
      break;
    }
    index.next_line = (*next)->id + 1;
    if (o.progress) o.progress(index.documents_done(), result.total);
    const auto now = std::chrono::steady_clock::now();
    if (++since_checkpoint >= o.checkpoint_documents ||
        std::chrono::duration<double>(now - last_checkpoint).count() >= o.checkpoint_seconds) {
      commit_corpus_checkpoint(o.out_dir, index);
      last_checkpoint = now;
      since_checkpoint = 0;
    }
  }
  if (index.finished())
    index.next_line = index.identity.lines;  // the same wherever the last document sits
  commit_corpus_checkpoint(o.out_dir, index);
  write_corpus_views(o.out_dir, index);
  result.done = index.documents_done();
  result.measured = index.state.measured;
  result.skipped = int64_t(index.state.skipped.size());
  result.finished = index.finished();
  return result;
}

CorpusMergeResult merge_corpus(const std::string& out_dir,
                               const std::vector<std::string>& shard_dirs, bool allow_missing) {
  if (shard_dirs.empty())
    throw AtlasError("nothing to merge: give the shard folders after the output folder");
  std::vector<CorpusIndex> parts;
  std::map<int64_t, std::string> holder;  // shard index -> the folder holding it
  for (const std::string& dir : shard_dirs) {
    CorpusIndex part = read_corpus_folder(dir);
    if (!part.finished())
      throw AtlasError(dir + ": shard " + shard_text(part.shards.front(), part.shard_count) +
                       " is not finished (" + std::to_string(part.documents_done()) + " of " +
                       std::to_string(part.shard_documents) +
                       " documents); run the same atlas corpus command again to finish it");
    if (!parts.empty()) {
      const std::string diff = run_difference(parts.front(), part, false);
      if (!diff.empty())
        throw AtlasError(dir + " and " + shard_dirs.front() + " are not shards of one run: " + dir +
                         " is a run of " + diff);
    }
    for (int64_t k : part.shards) {
      auto [at, added] = holder.emplace(k, dir);
      if (!added)
        throw AtlasError(
            at->second + " and " + dir + " both hold shard " + shard_text(k, part.shard_count) +
            (at->second == dir ? " (a folder given twice)" : "") + "; give each shard once");
    }
    parts.push_back(std::move(part));
  }
  CorpusIndex merged = parts.front();
  for (size_t i = 1; i < parts.size(); ++i) {
    merged.state.merge(parts[i].state, merged.identity.settings.top);
    merged.shard_documents += parts[i].shard_documents;
  }
  merged.shards.clear();
  for (const auto& [k, dir] : holder) merged.shards.push_back(k);
  merged.next_line = merged.identity.lines;
  CorpusMergeResult result;
  for (int64_t k = 0; k < merged.shard_count; ++k)
    if (!holder.count(k)) result.missing_shards.push_back(k);
  if (!result.missing_shards.empty() && !allow_missing) {
    std::string list;
    for (int64_t k : result.missing_shards)
      list += (list.empty() ? "" : ", ") + shard_text(k, merged.shard_count);
    throw AtlasError("missing shards: " + list +
                     "; merge them too, or pass --allow-missing for an index of the " +
                     std::to_string(holder.size()) + " given");
  }
  if (result.missing_shards.empty()) {  // all of it: the same as one unsplit run
    merged.shard_count = 1;
    merged.shards = {0};
  }

  std::error_code ec;
  for (const std::string& dir : shard_dirs)
    if (fs::equivalent(out_dir, dir, ec))
      throw AtlasError(out_dir + " is one of the shards; merge into a new folder");
  const FolderContents c = inspect_output_folder(out_dir, is_corpus_folder_entry);
  if (!c.foreign.empty())
    throw AtlasError(out_dir + " holds \"" + c.foreign +
                     "\", which is no part of a corpus run; merge into a new or empty folder");
  if (fs::exists(fs::path(out_dir) / "manifest.json", ec)) {
    CorpusIndex there;
    try {
      there = read_corpus_folder(out_dir);
    } catch (const AtlasError& e) {
      throw AtlasError(std::string(e.what()) + "; merge into a new or empty folder");
    }
    const std::string diff = run_difference(there, merged, false);
    if (!there.finished() || !diff.empty())
      throw AtlasError(out_dir + " holds " +
                       (diff.empty() ? "an unfinished corpus run" : "a corpus run of " + diff) +
                       "; merge into a new or empty folder");
  }
  replace_folder(out_dir, [&](const std::string& staging) {
    commit_corpus_checkpoint(staging, merged);
    write_corpus_views(staging, merged);
  });
  result.documents = merged.documents_done();
  result.complete = merged.complete();
  return result;
}

}  // namespace atlas
