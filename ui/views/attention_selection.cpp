#include "ui/views/attention_selection.h"

#include <algorithm>

#include "core/tensor/error.h"

namespace atlas::ui {

QString AttentionFamily::label() const {  // "decoder cross-attention": the core's wording
  AttentionMap m;
  m.stack = stack.toStdString();
  m.sublayer = kind.toStdString();
  return QString::fromStdString(attention_family_label(m));
}

std::vector<AttentionFamily> attentionFamilies(const Trace& trace) {
  std::vector<AttentionFamily> out;
  for (const AttentionMap& m : trace.attention_maps) {
    // One LSH hash round on its own: the layer's map is the rounds combined (round -1).
    if (m.round >= 0) continue;
    const QString stack = QString::fromStdString(m.stack), kind = QString::fromStdString(m.sublayer);
    auto it = std::find_if(out.begin(), out.end(), [&](const AttentionFamily& f) {
      return f.stack == stack && f.kind == kind;
    });
    if (it == out.end()) {
      out.push_back({stack, kind, 0, 0});
      it = out.end() - 1;
    }
    if (m.step >= 0) {
      it->steps = true;
      it->layers = std::max(it->layers, static_cast<int>(m.step));
    } else {
      it->layers = std::max(it->layers, static_cast<int>(m.layer) + 1);
    }
    if (m.segment >= 0) it->segments = std::max(it->segments, static_cast<int>(m.segment) + 1);
    it->heads = std::max(it->heads, static_cast<int>(m.heads));
    it->kvHeads = std::max(it->kvHeads, static_cast<int>(m.kv_heads));
  }
  return out;
}

const AttentionFamily* findFamily(const std::vector<AttentionFamily>& families, const QString& stack,
                                  const QString& kind) {
  for (const AttentionFamily& f : families)
    if (f.stack == stack && f.kind == kind) return &f;
  return nullptr;
}

const AttentionMap* findAttentionMap(const Trace& trace, const AttentionSelection& sel) {
  const std::string stack = sel.stack.toStdString(), sublayer = sel.kind.toStdString();
  for (const AttentionMap& m : trace.attention_maps) {
    if (m.round >= 0 || m.stack != stack || m.sublayer != sublayer) continue;
    if (m.segment >= 0 && m.segment != sel.segment) continue;
    if (m.step >= 0 ? m.step != sel.layer + 1 : m.layer != sel.layer) continue;
    return &m;
  }
  return nullptr;
}

namespace {

// "the trace has no decoder self-attention, segment 9, layer 0 ('decoder.seg9.layer0.self_attn');
// it has segments 0 to 2 and layers 0 to 1": what was asked for and what there is to choose.
std::string missingMapMessage(const Trace& trace, const AttentionSelection& sel) {
  const auto families = attentionFamilies(trace);
  const AttentionFamily* f = findFamily(families, sel.stack, sel.kind);
  if (!f) {
    std::string have;
    for (const AttentionFamily& g : families) have += (have.empty() ? "" : ", ") + g.label().toStdString();
    return "the trace has no " + AttentionFamily{sel.stack, sel.kind}.label().toStdString() + " (" +
           (have.empty() ? std::string("this model records no attention over tokens")
                         : "it has: " + have) +
           ")";
  }
  AttentionMap want;
  want.stack = sel.stack.toStdString();
  want.sublayer = sel.kind.toStdString();
  want.layer = f->steps ? 0 : sel.layer;
  want.step = f->steps ? sel.layer + 1 : -1;
  want.segment = f->segments > 0 ? sel.segment : -1;
  std::string s = "the trace has no " + attention_map_title(want) + " ('" + attention_array_name(want) +
                  "'); it has ";
  if (f->segments > 0) s += "segments 0 to " + std::to_string(f->segments - 1) + " and ";
  s += f->steps ? "steps 1 to " + std::to_string(f->layers)
                : "layers 0 to " + std::to_string(f->layers - 1);
  return s;
}

}  // namespace

const AttentionMap& requireAttentionMap(const Trace& trace, const AttentionSelection& sel) {
  const AttentionMap* m = findAttentionMap(trace, sel);
  if (!m) throw AtlasError(missingMapMessage(trace, sel));
  return *m;
}

std::string attentionArrayName(const Trace& trace, const AttentionSelection& sel) {
  return requireAttentionMap(trace, sel).array;
}

bool rolloutApplies(const Trace& trace, const AttentionFamily& family, int segment) {
  if (!family.isSelfAttention() || family.layers <= 0) return false;
  int64_t n = -1;
  for (int l = 0; l < family.layers; ++l) {
    const AttentionMap* m = findAttentionMap(trace, {family.stack, family.kind, l, 0, segment});
    // R_l = A'_l R_{l-1} needs every layer's keys to be the tokens its queries are.
    if (!m || m->memory_keys > 0 || m->queries.side != m->keys.side || m->queries.begin != m->keys.begin ||
        m->queries.count != m->keys.count || (n >= 0 && m->queries.count != n))
      return false;
    n = m->queries.count;
  }
  return true;
}

QString headName(int head) {
  switch (head) {
    case HeadMean: return "mean over heads";
    case HeadMax: return "max over heads";
    case HeadRollout: return "attention rollout";
    case HeadFlow: return "attention flow (max-flow)";
    case HeadSink: return "attention sink (mean weight on the first key)";
    default: return QString("head %1").arg(head);
  }
}

QString headShortName(int head) {
  switch (head) {
    case HeadMean: return "mean";
    case HeadMax: return "max";
    case HeadRollout: return "rollout";
    case HeadFlow: return "flow";
    case HeadSink: return "sink";
    default: return QString("H%1").arg(head);
  }
}

}  // namespace atlas::ui
