#pragma once
// Which attention map the views show, found in the trace's attention-map catalogue
// (core/model/attention_map.h), never by parsing array names: the map families of a trace, the
// head or aggregate selector values, and the lookup of the map a selection names.
#include <QString>
#include <string>
#include <vector>

#include "core/model/trace.h"

namespace atlas::ui {

// One attention family of a trace, e.g. the encoder self-attention: the maps of the trace's
// attention-map catalogue (core/model/attention_map.h) with one stack and sub-layer. A map is
// chosen by layer (a Universal Transformer's step n is layer n - 1) and, for Transformer-XL, by
// segment.
struct AttentionFamily {
  QString stack;  // "encoder" | "decoder" | a model's own ("snail", "sagan")
  QString kind;   // the sub-layer: "attn" | "self_attn" | "cross_attn"
  int layers = 0;    // layers, or steps when `steps`
  int heads = 0;     // the most heads of any map
  int segments = 0;  // Transformer-XL segments; 0 = the model has none
  bool steps = false;  // Universal Transformer: layer index i is step i + 1
  int kvHeads = 0;     // grouped-query attention: query heads share kvHeads key/value heads
  bool grouped() const { return kvHeads > 0 && kvHeads < heads && heads % kvHeads == 0; }
  int groupOf(int head) const { return grouped() ? head / (heads / kvHeads) : head; }
  QString label() const;  // "encoder self-attention"
  QString layerWord() const { return steps ? "step" : "layer"; }
  int layerNumber(int layer) const { return steps ? layer + 1 : layer; }  // as the user reads it
  bool isSelfAttention() const { return kind != "cross_attn"; }
};

// Head selector values besides a head index >= 0.
// HeadSink is a model-grid column only (the attention sink per head, model_view.h), not a map.
enum HeadAggregate : int { HeadMean = -1, HeadMax = -2, HeadRollout = -3, HeadSink = -4, HeadFlow = -5 };
QString headName(int head);       // "head 3", "mean over heads", ...
QString headShortName(int head);  // "H3", "mean", "max", "rollout"

struct AttentionSelection {
  QString stack = "encoder";
  QString kind = "attn";
  int layer = 0;    // layer, or step - 1 for a step family
  int head = 0;     // >= 0 or a HeadAggregate
  int segment = 0;  // Transformer-XL segment; ignored by families without segments
  // The query row the user pinned, -1 = none. Attention flow of an input too long for the whole
  // matrix (kAttentionFlowFullLimit) computes this row; the other views draw every row.
  int query = -1;
};

// Families of the catalogue, grouped by stack and sub-layer in the order the maps were produced.
std::vector<AttentionFamily> attentionFamilies(const Trace& trace);
// The family of `stack`/`kind` in `families`, or nullptr.
const AttentionFamily* findFamily(const std::vector<AttentionFamily>& families, const QString& stack,
                                  const QString& kind);
// The catalogue entry `sel` names (stack, sub-layer, segment when the map has one, layer or
// step = layer + 1), or nullptr.
const AttentionMap* findAttentionMap(const Trace& trace, const AttentionSelection& sel);
// The same, or an AtlasError naming what is missing (and what the trace has to choose from).
const AttentionMap& requireAttentionMap(const Trace& trace, const AttentionSelection& sel);
// Its trace array ("decoder.seg1.layer0.self_attn"); throws AtlasError naming what is missing
// (and what the trace has) when there is no such map.
std::string attentionArrayName(const Trace& trace, const AttentionSelection& sel);
// Whether attention rollout applies to a family's maps in `segment`: self-attention whose
// queries and keys are the same tokens in every layer (not cross-attention, not XL memory).
bool rolloutApplies(const Trace& trace, const AttentionFamily& family, int segment);

}  // namespace atlas::ui
