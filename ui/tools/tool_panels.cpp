// The tool panels' list (tool_panels.h).
#include "ui/tools/tool_panels.h"

#include "ui/tools/compare_panel.h"
#include "ui/tools/corpus_panel.h"
#include "ui/tools/dla_panel.h"
#include "ui/tools/patching_panel.h"
#include "ui/tools/qk_decomposition_panel.h"
#include "ui/tools/score_panel.h"
#include "ui/tools/search_panel.h"
#include "ui/tools/sweep_panel.h"

namespace atlas::ui {
namespace {

// An entry for panel type P: made with `new P`, its run read through P's accessors.
template <class P>
ToolPanelEntry toolEntry(const QString& id, const QString& title, const QString& panelName, const QString& dockName) {
  ToolPanelEntry e;
  e.id = id;
  e.title = title;
  e.panelName = panelName;
  e.dockName = dockName;
  e.create = [] { return new P; };
  return e;
}

template <class P>
const P* asTool(const QWidget* w) {
  return static_cast<const P*>(w);
}

// A result panel's state (settings and the result it computed): kept when the panel is open
// or holds a result.
template <class P>
void keepsToolResult(ToolPanelEntry& e) {
  e.save = [](const QWidget* w) {
    const QJsonObject state = asTool<P>(w)->saveState();
    return w->isVisible() || state.contains("result") ? state : QJsonObject{};
  };
  e.restore = [](QWidget* w, const QJsonObject& state) {
    static_cast<P*>(w)->restoreState(state);  // a refusal is said in the panel's status
    return QString();
  };
}

}  // namespace

std::vector<ToolPanelEntry> toolPanels() {
  std::vector<ToolPanelEntry> all;

  ToolPanelEntry scores = toolEntry<ScorePanel>("scores", "Score functions", "scorePanel", "scoresDock");
  scores.model = [](const QWidget* w) { return asTool<ScorePanel>(w)->model(); };
  scores.trace = [](const QWidget* w) { return asTool<ScorePanel>(w)->trace(); };
  all.push_back(scores);  // nothing to keep: it shows the selected head of the run on screen

  ToolPanelEntry sweep = toolEntry<SweepPanel>("sweep", "Ablation sweep", "sweepPanel", "sweepDock");
  sweep.model = [](const QWidget* w) { return asTool<SweepPanel>(w)->model(); };
  sweep.trace = [](const QWidget* w) { return asTool<SweepPanel>(w)->runTrace(); };
  keepsToolResult<SweepPanel>(sweep);
  all.push_back(sweep);

  ToolPanelEntry patching = toolEntry<PatchingPanel>("patching", "Activation patching", "patchingPanel", "patchingDock");
  patching.model = [](const QWidget* w) { return asTool<PatchingPanel>(w)->model(); };
  patching.trace = [](const QWidget* w) { return asTool<PatchingPanel>(w)->trace(); };
  keepsToolResult<PatchingPanel>(patching);
  all.push_back(patching);

  ToolPanelEntry dla = toolEntry<DlaPanel>("dla", "Logit attribution", "dlaPanel", "dlaDock");
  dla.model = [](const QWidget* w) { return asTool<DlaPanel>(w)->model(); };
  dla.trace = [](const QWidget* w) { return asTool<DlaPanel>(w)->trace(); };
  keepsToolResult<DlaPanel>(dla);
  all.push_back(dla);

  ToolPanelEntry qk = toolEntry<QkDecompositionPanel>("qk", "QK decomposition", "qkDecompositionPanel",
                                                      "qkDecompositionDock");
  qk.model = [](const QWidget* w) { return asTool<QkDecompositionPanel>(w)->model(); };
  qk.trace = [](const QWidget* w) { return asTool<QkDecompositionPanel>(w)->trace(); };
  keepsToolResult<QkDecompositionPanel>(qk);
  all.push_back(qk);

  // Compare and token search keep inputs only (B runs again, the scores follow the run).
  ToolPanelEntry compare = toolEntry<ComparePanel>("compare", "Compare", "comparePanel", "compareDock");
  compare.model = [](const QWidget* w) { return asTool<ComparePanel>(w)->modelA(); };
  compare.trace = [](const QWidget* w) { return asTool<ComparePanel>(w)->traceA(); };
  compare.save = [](const QWidget* w) {
    const auto* p = asTool<ComparePanel>(w);
    const QJsonObject state = p->saveState();
    const bool hasB = !state["model"].toString().isEmpty() || !state["text"].toString().isEmpty();
    return w->isVisible() || hasB || p->comparing() ? state : QJsonObject{};
  };
  compare.restore = [](QWidget* w, const QJsonObject& state) {
    auto* p = static_cast<ComparePanel*>(w);
    return p->restoreState(state) ? QString() : p->status();  // B's model may have moved since
  };
  all.push_back(compare);

  ToolPanelEntry search = toolEntry<TokenSearchPanel>("search", "Token search", "searchPanel", "searchDock");
  search.model = {};  // patterns over the trace's tokens: no model of its own
  search.trace = [](const QWidget* w) { return asTool<TokenSearchPanel>(w)->trace(); };
  search.save = [](const QWidget* w) {
    const QJsonObject state = asTool<TokenSearchPanel>(w)->saveState();
    const bool patterns = !state["query"].toString().isEmpty() || !state["key"].toString().isEmpty();
    return w->isVisible() || patterns ? state : QJsonObject{};
  };
  search.restore = [](QWidget* w, const QJsonObject& state) {
    static_cast<TokenSearchPanel*>(w)->restoreState(state);
    return QString();
  };
  all.push_back(search);

  ToolPanelEntry corpus = toolEntry<CorpusPanel>("corpus", "Corpus", "corpusPanel", "corpusDock");
  corpus.model = [](const QWidget* w) { return asTool<CorpusPanel>(w)->model(); };
  // Its inputs (the file, the folder, the query): the run's results are the folder itself.
  corpus.save = [](const QWidget* w) {
    const QJsonObject state = asTool<CorpusPanel>(w)->saveState();
    return w->isVisible() || !state["file"].toString().isEmpty() ? state : QJsonObject{};
  };
  corpus.restore = [](QWidget* w, const QJsonObject& state) {
    static_cast<CorpusPanel*>(w)->restoreState(state);  // a refusal is said in the panel's status
    return QString();
  };
  all.push_back(corpus);
  return all;
}

}  // namespace atlas::ui
