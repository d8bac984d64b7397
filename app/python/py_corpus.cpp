#include "app/python/py_corpus.h"

#include <pybind11/numpy.h>
#include <pybind11/stl.h>

#include "app/python/py_interrupt.h"
#include "core/analysis/corpus_index.h"
#include "core/analysis/corpus_query.h"
#include "core/tensor/error.h"

namespace atlas::python {

namespace {

py::dict corpus_run(const PyModel& model, const std::string& file, const std::string& out,
                    const std::optional<std::string>& shard, int64_t top, int64_t max_tokens, bool exclude_self) {
  CorpusRunOptions o;
  o.model_argument = model.spec();  // recorded as given, as the CLI records its MODEL
  o.corpus_path = file;
  o.out_dir = out;
  if (out.empty()) throw AtlasError("out is empty; give the folder to write the index into");
  if (shard) o.shard = parse_corpus_shard(*shard, "shard");
  // The CLI's ranges (atlas corpus --top, --max-tokens).
  if (top < 1 || top > kMaxCorpusTop)
    throw AtlasError("top " + std::to_string(top) + " is out of range (1 to " + std::to_string(kMaxCorpusTop) + ")");
  if (max_tokens < 0) throw AtlasError("max_tokens " + std::to_string(max_tokens) + " is negative (0: the model's max_positions)");
  o.settings.top = top;
  o.settings.max_tokens = max_tokens;
  o.settings.exclude_self = exclude_self;
  Interrupt interrupt;  // Ctrl-C: the state is saved, the same call resumes
  o.cancel = &interrupt.cancel;
  o.progress = [&](int64_t, int64_t) { interrupt.check(); };
  CorpusRunResult r;
  {
    py::gil_scoped_release release;
    r = run_corpus(model.model(), o);
  }
  if (interrupt.error) throw *interrupt.error;
  if (r.total > 0 && r.measured == 0)  // as atlas corpus
    throw AtlasError("no document of " + file + " could be measured (" + std::to_string(r.skipped) +
                     " skipped; the reasons are in " + out + "/manifest.json)");
  py::dict d;
  d["total"] = r.total;
  d["done_before"] = r.done_before;
  d["done"] = r.done;
  d["measured"] = r.measured;
  d["skipped"] = r.skipped;
  py::list skips;
  for (const CorpusSkip& s : r.skipped_now) skips.append(py::make_tuple(s.document, s.reason));
  d["skipped_now"] = skips;
  d["finished"] = r.finished;
  return d;
}

py::dict merge(const std::string& out, const std::vector<std::string>& shards, bool allow_missing) {
  if (shards.empty()) throw AtlasError("corpus_merge takes at least one shard folder");
  CorpusMergeResult r;
  {
    py::gil_scoped_release release;
    r = merge_corpus(out, shards, allow_missing);
  }
  py::dict d;
  d["documents"] = r.documents;
  d["missing_shards"] = r.missing_shards;
  d["complete"] = r.complete;
  return d;
}

py::dict index_info(const std::string& dir) {
  const CorpusIndex index = read_corpus_folder(dir);
  const CorpusIdentity& id = index.identity;
  py::dict d;
  d["model"] = id.model_argument;
  d["model_name"] = id.model_name;
  d["corpus"] = id.corpus_path;
  d["documents"] = id.documents;
  d["done"] = index.documents_done();
  d["measured"] = index.state.measured;
  py::list skipped;
  for (const CorpusSkip& s : index.state.skipped) skipped.append(py::make_tuple(s.document, s.reason));
  d["skipped"] = skipped;
  d["finished"] = index.finished();
  d["complete"] = index.complete();
  d["top"] = id.settings.top;
  d["token_limit"] = id.token_limit;
  d["exclude_self"] = id.settings.exclude_self;
  d["shards"] = index.shards;
  d["shard_count"] = index.shard_count;
  return d;
}

CorpusLinkQuery link_query(const std::optional<std::string>& map, const std::optional<int64_t>& layer,
                           const std::optional<int64_t>& head) {
  if (map && layer) throw AtlasError("give map or layer, not both");
  CorpusLinkQuery q;
  q.map = map;
  q.layer = layer;
  q.head = head;
  return q;
}

// The map's place in the model, as the index's files list it.
void put_map(py::dict& d, const MapHead& k) {
  d["map"] = map_name(k);
  d["stack"] = k.stack;
  d["sublayer"] = k.sublayer;
  d["layer"] = k.layer;
  d["segment"] = k.segment >= 0 ? py::object(py::int_(k.segment)) : py::object(py::none());
  d["step"] = k.step >= 0 ? py::object(py::int_(k.step)) : py::object(py::none());
  d["head"] = k.head;
}

py::list links(const std::string& dir, const std::optional<std::string>& map, const std::optional<int64_t>& layer,
               const std::optional<int64_t>& head, const std::optional<std::string>& query_token,
               const std::optional<std::string>& key_token, int64_t top, int64_t context) {
  CorpusLinkQuery q = link_query(map, layer, head);
  q.query_token = query_token;
  q.key_token = key_token;
  if (top < 1) throw AtlasError("top " + std::to_string(top) + " is below 1");
  if (context < 0) throw AtlasError("context " + std::to_string(context) + " is negative");
  q.top = top;
  const CorpusIndex index = read_corpus_folder(dir);
  py::list out;
  for (const CorpusLinkMatch& m : find_corpus_links(index, q)) {
    const CorpusDocumentTokens& doc = index.state.documents.at(m.link.document);
    const auto& tokens = m.side == TokenSide::Source ? doc.source : doc.target;
    py::dict d;
    put_map(d, m.map);
    d["weight"] = m.link.weight;
    d["document"] = m.link.document;
    d["query"] = m.link.query;
    d["key"] = m.link.key;
    d["query_token"] = tokens[size_t(m.link.query)];
    d["key_token"] = tokens[size_t(m.link.key)];
    d["side"] = token_side_name(m.side);
    d["context"] = corpus_link_context(tokens, m.link.query, m.link.key, context, index.identity.token_join);
    out.append(d);
  }
  return out;
}

// Columns, one row per (map, head) in the index's order: map, stack, sublayer (lists), layer,
// segment, step (-1 for none), head, documents (int64 arrays) and each statistic's mean (float64).
py::dict heads(const std::string& dir, const std::optional<std::string>& map, const std::optional<int64_t>& layer,
               const std::optional<int64_t>& head) {
  const CorpusLinkQuery q = link_query(map, layer, head);
  const CorpusIndex index = read_corpus_folder(dir);
  check_head_table_query(index, q);  // an unknown map, layer or head is refused, not an empty table
  std::vector<std::string> maps, stacks, sublayers;
  std::vector<int64_t> layers, segments, steps, heads_of, documents;
  std::vector<std::vector<double>> means(kHeadStatisticCount);
  for (const auto& [key, row] : index.state.heads) {
    if ((q.map && map_name(key) != *q.map) || (q.layer && map_layer_row(key) != *q.layer) ||
        (q.head && key.head != *q.head))
      continue;
    maps.push_back(map_name(key));
    stacks.push_back(key.stack);
    sublayers.push_back(key.sublayer);
    layers.push_back(key.layer);
    segments.push_back(key.segment);
    steps.push_back(key.step);
    heads_of.push_back(key.head);
    documents.push_back(row.documents);
    for (int s = 0; s < kHeadStatisticCount; ++s) means[size_t(s)].push_back(row.mean(s));
  }
  py::dict d;
  d["map"] = maps;
  d["stack"] = stacks;
  d["sublayer"] = sublayers;
  d["layer"] = py::array_t<int64_t>(py::ssize_t(layers.size()), layers.data());
  d["segment"] = py::array_t<int64_t>(py::ssize_t(segments.size()), segments.data());
  d["step"] = py::array_t<int64_t>(py::ssize_t(steps.size()), steps.data());
  d["head"] = py::array_t<int64_t>(py::ssize_t(heads_of.size()), heads_of.data());
  d["documents"] = py::array_t<int64_t>(py::ssize_t(documents.size()), documents.data());
  for (int s = 0; s < kHeadStatisticCount; ++s)
    d[head_statistic_name(HeadStatistic(s))] = py::array_t<double>(py::ssize_t(means[size_t(s)].size()), means[size_t(s)].data());
  return d;
}

}  // namespace

void bind_corpus(py::module_& m, py::class_<PyModel>& model_class) {
  model_class.def("corpus", &corpus_run, py::arg("file"), py::arg("out"), py::arg("shard") = py::none(),
                  py::arg("top") = 100, py::arg("max_tokens") = 0, py::arg("exclude_self") = false,
                  "atlas corpus (docs/corpus.md): runs or resumes the model over every non-empty line of file, "
                  "writing the index into the folder out; returns total, done_before, done (in all), measured, skipped, "
                  "skipped_now [(document, reason)], finished. Ctrl-C saves the state (the same call resumes) "
                  "and raises KeyboardInterrupt");
  m.def("corpus_merge", &merge, py::arg("out"), py::arg("shards"), py::arg("allow_missing") = false,
        "atlas corpus-merge: joins finished shard folders into out; returns documents, missing_shards, complete");
  m.def("corpus_index", &index_info, py::arg("dir"),
        "What a corpus folder holds (atlas corpus-query's first line): model, corpus, documents, done, "
        "measured, skipped [(document, reason)], finished, complete, top, token_limit, exclude_self, shards");
  m.def("corpus_links", &links, py::arg("dir"), py::arg("map") = py::none(), py::arg("layer") = py::none(),
        py::arg("head") = py::none(), py::arg("query_token") = py::none(), py::arg("key_token") = py::none(),
        py::arg("top") = 10, py::arg("context") = 8,
        "atlas corpus-query: the top strongest links passing the filters, strongest first, one dict each: map, "
        "stack, sublayer, layer, segment, step, head, weight, document, query, key, query_token, key_token, "
        "side, context (the document around them, query [[marked]], key <<marked>>)");
  m.def("corpus_heads", &heads, py::arg("dir"), py::arg("map") = py::none(), py::arg("layer") = py::none(),
        py::arg("head") = py::none(),
        "atlas corpus-query --heads as columns (pandas.DataFrame(...) takes it): map, stack, sublayer, layer, "
        "segment, step (-1: none), head, documents and each statistic's mean over the documents");
}

}  // namespace atlas::python
