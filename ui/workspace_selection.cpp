#include "ui/workspace_selection.h"

#include <QStringList>

namespace atlas::ui {
namespace {

QString outOfRange(const QString& what, long long value, const QString& holder, long long first, long long last,
                   const QString& more = QString()) {
  return QString("%1 %2 is out of range: %3 (%4 to %5%6)")
      .arg(what)
      .arg(value)
      .arg(holder)
      .arg(first)
      .arg(last)
      .arg(more.isEmpty() ? QString() : ", " + more);
}

}  // namespace

QString workspaceSelectionProblem(const AttentionSelection& sel, int query,
                                  const std::vector<AttentionFamily>& families, const Trace& trace) {
  const AttentionFamily* f = findFamily(families, sel.stack, sel.kind);
  if (!f) {
    QStringList have;
    for (const AttentionFamily& g : families) have << g.label();
    return QString("the workspace shows the %1 %2 attention, which this run does not have (it has: %3)")
        .arg(sel.stack, sel.kind, have.isEmpty() ? "none" : have.join(", "));
  }
  const QString family = f->label();
  if (sel.layer < 0 || sel.layer >= f->layers) {
    const QString word = f->layerWord();
    const long long base = f->steps ? 1 : 0;  // steps are read from 1 (layerNumber, without its int overflow)
    return outOfRange(word, sel.layer + base, QString("the %1 has %2 %3s").arg(family).arg(f->layers).arg(word), base,
                      f->layers - 1 + base);
  }
  if (f->segments == 0 && sel.segment != 0)
    return QString("segment %1: the %2 has no segments (it is not a Transformer-XL's)").arg(sel.segment).arg(family);
  if (f->segments > 0 && (sel.segment < 0 || sel.segment >= f->segments))
    return outOfRange("segment", sel.segment, QString("this run has %1 segments of the %2").arg(f->segments).arg(family),
                      0, f->segments - 1);
  const bool rollout = rolloutApplies(trace, *f, sel.segment);
  const bool aggregate = sel.head == HeadMean || sel.head == HeadMax ||
                         (rollout && (sel.head == HeadRollout || sel.head == HeadFlow));
  if (sel.head >= f->heads || (sel.head < 0 && !aggregate))
    return outOfRange("head", sel.head, QString("the %1 has %2 heads").arg(family).arg(f->heads), 0, f->heads - 1,
                      rollout ? "or mean, max, rollout, flow" : "or mean, max");
  if (query >= 0) {
    const AttentionMap* map = findAttentionMap(trace, sel);
    const long long first = map ? map->queries.begin : 0, count = map ? map->queries.count : 0;
    if (query < first || query >= first + count)
      return QString("query %1 is out of range: the %2 has %3 queries (tokens %4 to %5)")
          .arg(query)
          .arg(family)
          .arg(count)
          .arg(first)
          .arg(first + count - 1);
  }
  return {};
}

}  // namespace atlas::ui
