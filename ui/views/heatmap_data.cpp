#include "ui/views/heatmap_data.h"

#include "core/model/model.h"
#include "ui/export/svg_writer.h"

namespace atlas::ui {

int HeatmapData::rankInRow(int r, int c) const {
  const float v = at(r, c);
  int rank = 1;
  for (int j = 0; j < cols; ++j)
    if (j != c && !masked(r, j) && at(r, j) > v) ++rank;
  return rank;
}

QString displayLabel(const std::string& label) {
  if (label.empty()) return QStringLiteral("\u2205");
  QString s = QString::fromStdString(label);
  s.replace(' ', QChar(0x2423));    // open box: a visible space
  s.replace('\n', QChar(0x21B5));   // return arrow
  s.replace('\t', QChar(0x21E5));   // tab arrow
  return figureText(s);             // other controls as their symbols: U+0001 -> U+2401
}

QString vocabularyLabel(const Model& model, int64_t id) {
  if (id >= 0 && id < model.tokenizer().vocab_size()) return QString::fromStdString(model.tokenizer().label(int32_t(id)));
  return QString("<%1>").arg(id);
}

QStringList queryLabelsOf(const Trace& trace, const AttentionMap& map) {
  QStringList out;
  for (const std::string& l : query_labels(trace, map)) out << displayLabel(l);
  return out;
}

QStringList keyLabelsOf(const Trace& trace, const AttentionMap& map) {
  QStringList out;
  const std::vector<std::string> keys = key_labels(trace, map);
  for (size_t j = 0; j < keys.size(); ++j)
    out << (static_cast<int64_t>(j) < map.memory_keys ? kMemoryKeyMark : QString()) + displayLabel(keys[j]);
  return out;
}

}  // namespace atlas::ui
