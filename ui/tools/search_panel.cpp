// Token search panel (search_panel.h).
#include "ui/tools/search_panel.h"

#include <QFormLayout>
#include <QLabel>
#include <QLineEdit>
#include <QVBoxLayout>

#include "core/analysis/head_table.h"
#include "core/analysis/token_search.h"
#include "core/tensor/error.h"
#include "ui/panels/variant_panel.h"
#include "ui/panels/variant_plots.h"

namespace atlas::ui {

TokenSearchPanel::TokenSearchPanel(QWidget* parent) : QWidget(parent) {
  setObjectName("tokenSearchPanel");
  m_query = new QLineEdit;
  m_query->setPlaceholderText("query token, e.g. it (run* by prefix, * any)");
  m_key = new QLineEdit;
  m_key->setPlaceholderText("key token, e.g. cat");
  m_status = new QLabel("Type a query token and a key token: every head is scored by how much attention the "
                        "matching queries put on the matching keys.");
  m_status->setWordWrap(true);
  auto* controls = new QWidget;
  auto* form = new QFormLayout(controls);
  form->setContentsMargins(0, 0, 0, 0);
  form->addRow("Query:", m_query);
  form->addRow("Key:", m_key);
  form->addRow(m_status);

  auto plots = [this](const Trace& t, const PanelContext&) {
    std::vector<PanelPlot> out;
    const std::string q = m_query->text().trimmed().toStdString(), k = m_key->text().trimmed().toStdString();
    if (q.empty() || k.empty()) return out;
    const std::vector<TokenLinkScore> scores = search_token_links(t, q, k);  // throws: shown as the note
    std::vector<HeadValue> values;
    for (const auto& s : scores) values.push_back({&s.map, s.head, s.score});
    for (const HeadTable& table : head_tables(values)) {
      PanelPlot plot;
      plot.kind = PanelPlot::Kind::Matrix;
      QString label = QString::fromStdString(attention_family_label(table.map));
      if (table.map.segment >= 0) label += QString(", segment %1").arg(table.map.segment);
      plot.name = label + ": \u201C" + QString::fromStdString(q) + "\u201D \u2192 \u201C" + QString::fromStdString(k) + "\u201D";
      plot.matrix = layersByHeads(table.layers, table.heads, table.steps, table.values, plot.name,
                                  "attention on matching keys");
      plot.rowAxis = table.steps ? PlotAxis::Step : PlotAxis::Layer;
      plot.colAxis = PlotAxis::Head;
      out.push_back(std::move(plot));
    }
    return out;
  };
  m_plots = embedToolPlots(this, "search", "Token search", plots, controls);
  connect(m_plots, &VariantPanel::layerPicked, this, &TokenSearchPanel::layerPicked);
  connect(m_plots, &VariantPanel::headPicked, this, &TokenSearchPanel::headPicked);
  connect(m_query, &QLineEdit::textChanged, this, &TokenSearchPanel::update);
  connect(m_key, &QLineEdit::textChanged, this, &TokenSearchPanel::update);
}

void TokenSearchPanel::setTrace(std::shared_ptr<const Trace> trace) {
  m_trace = std::move(trace);
  update();
}

void TokenSearchPanel::setPatterns(const QString& query, const QString& key) {
  m_query->setText(query);
  m_key->setText(key);
}

void TokenSearchPanel::setStyle(const HeatmapStyle& style, bool dark) { m_plots->setStyle(style, dark); }

QJsonObject TokenSearchPanel::saveState() const {
  QJsonObject o;
  o["query"] = m_query->text();
  o["key"] = m_key->text();
  return o;
}

void TokenSearchPanel::restoreState(const QJsonObject& o) {
  try {
    for (auto it = o.begin(); it != o.end(); ++it)
      if (it.key() != "query" && it.key() != "key")
        throw AtlasError("unknown key \"" + it.key().left(80).toStdString() + "\"");
    for (const char* key : {"query", "key"})
      if (o.contains(key) && !o[key].isString()) throw AtlasError(std::string("\"") + key + "\" must be a string");
  } catch (const AtlasError& e) {
    m_status->setText(QString("The workspace's token search (tools.search) was not restored: %1").arg(e.what()));
    return;
  }
  setPatterns(o["query"].toString(), o["key"].toString());
}

QString TokenSearchPanel::status() const { return m_status->text(); }

void TokenSearchPanel::update() {
  m_plots->setTrace(m_trace);
  QVector<int> queries, keys;
  const std::string q = m_query->text().trimmed().toStdString(), k = m_key->text().trimmed().toStdString();
  if (m_trace) {
    if (!q.empty())
      for (int64_t i : matching_tokens(m_trace->source_tokens, q)) queries << static_cast<int>(i);
    if (!k.empty())
      for (int64_t i : matching_tokens(m_trace->source_tokens, k)) keys << static_cast<int>(i);
  }
  if (!q.empty() && !k.empty())
    m_status->setText(QString("%1 matching queries, %2 matching keys in the input (highlighted among the tokens).")
                          .arg(queries.size())
                          .arg(keys.size()));
  emit matchesChanged(queries, keys);
}

}  // namespace atlas::ui
