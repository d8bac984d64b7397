// Corpus panel (corpus_panel.h). Runs on a worker with the CPU backend; the run itself is
// core's run_corpus, so the folder it writes is the CLI's, byte for byte.
#include "ui/tools/corpus_panel.h"

#include <QCheckBox>
#include <QFileDialog>
#include <QFormLayout>
#include <QHBoxLayout>
#include <QHeaderView>
#include <QLabel>
#include <QLineEdit>
#include <QMetaObject>
#include <QPointer>
#include <QProgressBar>
#include <QPushButton>
#include <QSpinBox>
#include <QTableWidget>
#include <QVBoxLayout>
#include <QtConcurrent/QtConcurrentRun>
#include <chrono>
#include <cmath>

#include "core/tensor/error.h"
#include "ui/dialog_folders.h"
#include "ui/tools/tool_run.h"

namespace atlas::ui {

namespace {

QWidget* withBrowse(QLineEdit* edit, const std::function<void()>& browse) {
  auto* row = new QWidget;
  auto* h = new QHBoxLayout(row);
  h->setContentsMargins(0, 0, 0, 0);
  h->addWidget(edit, 1);
  auto* button = new QPushButton("Browse\u2026");
  QObject::connect(button, &QPushButton::clicked, row, browse);
  h->addWidget(button);
  return row;
}

}  // namespace

CorpusPanel::CorpusPanel(QWidget* parent) : QWidget(parent) {
  setObjectName("corpusPanel");
  m_file = new QLineEdit;
  m_file->setPlaceholderText("a text file, one document per line");
  m_out = new QLineEdit;
  m_out->setPlaceholderText("a new or empty folder (the same folder resumes a run)");
  m_top = new QSpinBox;
  m_top->setRange(1, 10000);
  m_top->setValue(100);
  m_top->setToolTip("Links kept per map and head");
  m_run = new QPushButton("Run / resume");
  m_cancel = new QPushButton("Cancel");
  m_progress = new QProgressBar;
  m_queryToken = new QLineEdit;
  m_queryToken->setPlaceholderText("query token (any)");
  m_keyToken = new QLineEdit;
  m_keyToken->setPlaceholderText("key token (any)");
  m_selectedOnly = new QCheckBox("Selected layer and head only");
  m_selectedOnly->setChecked(true);
  auto* find = new QPushButton("Find links");
  m_table = new QTableWidget;
  m_table->setColumnCount(6);
  m_table->setHorizontalHeaderLabels({"weight", "map", "head", "document", "query \u2192 key", "context"});
  m_table->horizontalHeader()->setStretchLastSection(true);
  m_table->setEditTriggers(QAbstractItemView::NoEditTriggers);
  m_status = new QLabel("Choose a text file and an output folder, then Run.");
  m_status->setWordWrap(true);

  auto* form = new QFormLayout;
  form->addRow("Text file:", withBrowse(m_file, [this] {
                 const QString f = QFileDialog::getOpenFileName(this, "Corpus text file", dialogFolder(DialogPurpose::Corpus));
                 rememberDialogChoice(DialogPurpose::Corpus, f);
                 if (!f.isEmpty()) m_file->setText(f);
               }));
  form->addRow("Output folder:", withBrowse(m_out, [this] {
                 const QString d = QFileDialog::getExistingDirectory(this, "Corpus output folder", dialogFolder(DialogPurpose::Corpus));
                 rememberDialogChoice(DialogPurpose::Corpus, d);
                 if (!d.isEmpty()) m_out->setText(d);
               }));
  form->addRow("Links per head:", m_top);
  auto* runRow = new QHBoxLayout;
  runRow->addWidget(m_run);
  runRow->addWidget(m_cancel);
  runRow->addWidget(m_progress, 1);
  auto* queryRow = new QHBoxLayout;
  queryRow->addWidget(m_queryToken);
  queryRow->addWidget(m_keyToken);
  queryRow->addWidget(m_selectedOnly);
  queryRow->addWidget(find);
  auto* v = new QVBoxLayout(this);
  v->setContentsMargins(2, 2, 2, 2);
  v->addLayout(form);
  v->addLayout(runRow);
  v->addWidget(m_status);
  v->addLayout(queryRow);
  v->addWidget(m_table, 1);

  connect(m_run, &QPushButton::clicked, this, [this] { start(); });
  connect(m_cancel, &QPushButton::clicked, this, &CorpusPanel::cancel);
  connect(find, &QPushButton::clicked, this, [this] { query(); });
  connect(m_keyToken, &QLineEdit::returnPressed, this, [this] { query(); });
  connect(&m_watcher, &QFutureWatcher<Outcome>::finished, this, &CorpusPanel::onRunDone);
  m_cancel->setEnabled(false);
}

CorpusPanel::~CorpusPanel() {
  if (m_cancelFlag) m_cancelFlag->store(true);
  m_watcher.waitForFinished();
}

void CorpusPanel::setModel(std::shared_ptr<const Model> model, const QString& spec) {
  const bool switched = model != m_model;
  m_model = std::move(model);
  m_spec = spec;
  // The links on screen are another model's run over the corpus: not shown beside this one's
  // views. The folder keeps them; Find links reads it again.
  if (switched && m_index) {
    const QString made = QString::fromStdString(m_index->identity.model_argument);
    m_index.reset();
    m_matches.clear();
    m_table->setRowCount(0);
    setStatus(QString("The model changed: the links of %1 were cleared; Find links reads the folder again.").arg(made));
  }
}

void CorpusPanel::setSelection(int layer, int head) {
  m_layer = layer;
  m_head = head;
}

void CorpusPanel::setPaths(const QString& corpusFile, const QString& outDir) {
  m_file->setText(corpusFile);
  m_out->setText(outDir);
}

void CorpusPanel::setQuery(const QString& queryToken, const QString& keyToken, bool selectedHeadOnly) {
  m_queryToken->setText(queryToken);
  m_keyToken->setText(keyToken);
  m_selectedOnly->setChecked(selectedHeadOnly);
}

bool CorpusPanel::start() {
  if (isRunning()) return false;
  if (!m_model) {
    setStatus("Load a model first.");
    return false;
  }
  if (m_file->text().trimmed().isEmpty() || m_out->text().trimmed().isEmpty()) {
    setStatus("Choose a text file and an output folder.");
    return false;
  }
  CorpusRunOptions o;
  o.model_argument = m_spec.toStdString();
  o.corpus_path = m_file->text().trimmed().toStdString();
  o.out_dir = m_out->text().trimmed().toStdString();
  o.settings.top = m_top->value();
  m_cancelFlag = std::make_shared<std::atomic<bool>>(false);
  o.cancel = m_cancelFlag.get();
  QPointer<CorpusPanel> self(this);
  // The time left, from the documents measured so far in this run (a resumed run's earlier ones
  // are not timed): the first call reports where the run starts.
  struct Pace {
    std::chrono::steady_clock::time_point started;
    int64_t first = -1;
  };
  o.progress = [self, pace = std::make_shared<Pace>()](int64_t done, int64_t total) {
    const auto now = std::chrono::steady_clock::now();
    if (pace->first < 0) {
      pace->first = done;
      pace->started = now;
    }
    const int64_t measured = done - pace->first;
    const double left = measured > 0 ? std::chrono::duration<double>(now - pace->started).count() /
                                           double(measured) * double(total - done)
                                     : -1;
    QMetaObject::invokeMethod(self.data(), [self, done, total, left] {
      if (!self) return;
      self->m_progress->setRange(0, static_cast<int>(std::max<int64_t>(1, total)));
      self->m_progress->setValue(static_cast<int>(done));
      if (left >= 0 && done < total)
        self->setStatus(QString("Running over the corpus: %1 of %2 documents, about %3 left\u2026")
                            .arg(done)
                            .arg(total)
                            .arg(durationText(left)));
    }, Qt::QueuedConnection);
  };
  m_progress->setValue(0);
  m_runModel = m_model;
  setStatus("Running over the corpus\u2026");
  m_watcher.setFuture(QtConcurrent::run([model = m_model, o, cancel = m_cancelFlag]() {
    Outcome out;
    try {
      out.result = run_corpus(*model, o);
    } catch (const std::exception& e) {
      out.error = QString::fromStdString(e.what());
    }
    return out;
  }));
  m_run->setEnabled(false);
  m_cancel->setEnabled(true);
  return true;
}

void CorpusPanel::cancel() {
  if (m_cancelFlag) m_cancelFlag->store(true);
}

bool CorpusPanel::isRunning() const { return m_watcher.isRunning(); }

QString CorpusPanel::status() const { return m_status->text(); }

void CorpusPanel::setStatus(const QString& text) { m_status->setText(text); }

void CorpusPanel::onRunDone() {
  const Outcome out = m_watcher.result();
  m_run->setEnabled(true);
  m_cancel->setEnabled(false);
  if (!out.error.isEmpty()) {
    setStatus(out.error);
  } else if (out.result.cancelled) {
    setStatus(QString("Cancelled after %1 of %2 documents; the state is saved: Run again to resume.")
                  .arg(out.result.done_before + out.result.done)
                  .arg(out.result.total));
  } else {
    setStatus(QString("%1 documents: %2 measured, %3 skipped (too long or refused by the tokenizer).")
                  .arg(out.result.total)
                  .arg(out.result.measured)
                  .arg(out.result.skipped));
    // A run of the model before a switch: its links are not shown beside this model's views.
    if (m_runModel == m_model) query();
    else setStatus(status() + " The model changed during the run: Find links reads its folder.");
  }
  m_runModel.reset();
  emit finished();
}

QJsonObject CorpusPanel::saveState() const {
  QJsonObject o;
  o["file"] = m_file->text();
  o["out"] = m_out->text();
  o["top"] = m_top->value();
  o["query_token"] = m_queryToken->text();
  o["key_token"] = m_keyToken->text();
  o["selected_only"] = m_selectedOnly->isChecked();
  return o;
}

void CorpusPanel::restoreState(const QJsonObject& o) {
  const QStringList texts = {"file", "out", "query_token", "key_token"};
  try {
    for (auto it = o.begin(); it != o.end(); ++it)
      if (!texts.contains(it.key()) && it.key() != "top" && it.key() != "selected_only")
        throw AtlasError("unknown key \"" + it.key().left(80).toStdString() + "\"");
    for (const QString& key : texts)
      if (o.contains(key) && !o[key].isString()) throw AtlasError("\"" + key.toStdString() + "\" must be a string");
    if (o.contains("selected_only") && !o["selected_only"].isBool())
      throw AtlasError("\"selected_only\" must be true or false");
    if (o.contains("top")) {
      const double top = o["top"].isDouble() ? o["top"].toDouble() : -1;
      if (top != std::floor(top) || top < m_top->minimum() || top > m_top->maximum())
        throw AtlasError(QString("\"top\" must be a whole number from %1 to %2").arg(m_top->minimum()).arg(m_top->maximum()).toStdString());
    }
  } catch (const AtlasError& e) {
    setStatus(QString("The workspace's corpus panel (tools.corpus) was not restored: %1").arg(e.what()));
    return;
  }
  setPaths(o["file"].toString(), o["out"].toString());
  if (o.contains("top")) m_top->setValue(o["top"].toInt());
  setQuery(o["query_token"].toString(), o["key_token"].toString(), o["selected_only"].toBool(true));
}

bool CorpusPanel::query() {
  try {
    m_index = read_corpus_folder(m_out->text().trimmed().toStdString());
    CorpusLinkQuery q;
    if (m_selectedOnly->isChecked()) {
      q.layer = m_layer;
      q.head = m_head;
    }
    if (!m_queryToken->text().trimmed().isEmpty()) q.query_token = m_queryToken->text().trimmed().toStdString();
    if (!m_keyToken->text().trimmed().isEmpty()) q.key_token = m_keyToken->text().trimmed().toStdString();
    q.top = 50;
    m_matches = find_corpus_links(*m_index, q);
  } catch (const std::exception& e) {
    m_matches.clear();
    m_table->setRowCount(0);
    setStatus(QString::fromStdString(e.what()));
    return false;
  }
  m_table->setRowCount(static_cast<int>(m_matches.size()));
  for (int r = 0; r < static_cast<int>(m_matches.size()); ++r) {
    const CorpusLinkMatch& m = m_matches[size_t(r)];
    const CorpusDocumentTokens& doc = m_index->state.documents.at(m.link.document);
    const auto& tokens = m.side == TokenSide::Source ? doc.source : doc.target;
    const QStringList cells = {
        QString::number(double(m.link.weight), 'g', 4), QString::fromStdString(map_name(m.map)),
        QString::number(m.map.head), QString::number(m.link.document),
        QString("%1 %2 \u2192 %3 %4")
            .arg(m.link.query)
            .arg(QString::fromStdString(tokens[size_t(m.link.query)]))
            .arg(m.link.key)
            .arg(QString::fromStdString(tokens[size_t(m.link.key)])),
        QString::fromStdString(corpus_link_context(tokens, m.link.query, m.link.key, 6, m_index->identity.token_join))};
    for (int c = 0; c < cells.size(); ++c) m_table->setItem(r, c, new QTableWidgetItem(cells[c]));
  }
  m_table->resizeColumnsToContents();
  if (m_matches.empty()) setStatus(status() + " No link matches the query.");
  return true;
}

}  // namespace atlas::ui
