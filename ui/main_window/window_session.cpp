#include "ui/main_window/window_session.h"

namespace atlas::ui {

namespace {

// Whether two selections name the same map, layer, head and segment.
bool sameSelection(const AttentionSelection& a, const AttentionSelection& b) {
  return a.stack == b.stack && a.kind == b.kind && a.layer == b.layer && a.head == b.head && a.segment == b.segment;
}

}  // namespace

void WindowSession::setModel(std::shared_ptr<const Model> model, const QString& spec) {
  m_model = std::move(model);
  m_modelSpec = spec;
}

void WindowSession::setRun(std::shared_ptr<const RunResult> result, const AttentionSelection& selection) {
  m_trace = result ? std::shared_ptr<const Trace>(result, &result->trace) : nullptr;
  m_selection = selection;
  emit runShown();
}

void WindowSession::setSelection(const AttentionSelection& selection) {
  if (sameSelection(selection, m_selection)) return;
  m_selection = selection;
  emit selectionShown();
}

void WindowSession::setQuery(int token) {
  if (token == m_query) return;
  m_query = token;
  emit selectionShown();
}

void WindowSession::setCell(int query, int key) {
  if (query == m_cellQuery && key == m_cellKey) return;
  m_cellQuery = query;
  m_cellKey = key;
  emit selectionShown();
}

void WindowSession::requestLayer(int layer) {
  AttentionSelection s = m_selection;
  s.layer = layer;
  emit selectionRequested(s);
}

void WindowSession::requestHead(int head) {
  AttentionSelection s = m_selection;
  s.head = head;
  emit selectionRequested(s);
}

}  // namespace atlas::ui
