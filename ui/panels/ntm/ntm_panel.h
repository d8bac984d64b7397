#pragma once
// "Neural Turing Machine explorer": the NTM addressing of core/variants/ntm/ntm.h driven by hand. The
// controller outputs of every step and head (key, beta, gate g, shift weights, gamma; erase
// and add for the write head) are edited with sliders and text fields; every change re-runs
// the machine with the core functions (no model forward) and redraws seed 004's four stages,
// the memory before/after the step and the weights over time (ui/panels/ntm/ntm_figure.h).
#include <QWidget>
#include <vector>

#include "core/variants/ntm/ntm.h"

class QComboBox;
class QLabel;
class QLineEdit;
class QSlider;
class QSpinBox;

namespace atlas::ui {

class NtmFigureWidget;

class NtmPanel : public QWidget {
  Q_OBJECT
 public:
  explicit NtmPanel(QWidget* parent = nullptr);

  const NtmRun& run() const { return m_run; }
  int step() const;
  int head() const;
  void setStep(int step);
  void setHead(int head);
  // The controls of one step and head as the panel holds them (what the sliders show).
  const NtmHeadControls& controls(int step, int head) const;
  void exportTo(const QString& path) const;  // .png .svg .pdf .npy (ntm_figure.h)
  // Takes the memory M_0 and every step's controller outputs from a model run's trace
  // (ntm-small: ntm.memory, ntm.<head>.key/.beta/.gate/.shift/.gamma/.erase/.add), so the
  // sliders start from what the seeded controller emitted. Throws AtlasError when the trace
  // has no NTM arrays or uses shifts other than -1..+1 (the three shift sliders).
  void loadTrace(const Trace& trace);

 signals:
  void recomputed();

 private:
  void buildUi();
  void resetMachine();   // memory from the seed, default controls for every step
  void setHeads(std::vector<NtmHeadSpec> heads);
  bool selectionValid() const;
  void loadControls();   // the selected step/head's controls -> widgets
  void storeControls();  // widgets -> controls, then recompute
  void recompute();
  void exportDialog();

  int m_slots = 8, m_width = 4;  // N, M (the manual default; a loaded run brings its own)
  std::vector<NtmHeadSpec> m_heads;
  Mat m_memory0;
  std::vector<std::vector<NtmHeadControls>> m_controls;  // [step][head]
  NtmRun m_run;
  bool m_loading = false;

  QSpinBox* m_seed = nullptr;
  QSpinBox* m_steps = nullptr;
  QSpinBox* m_step = nullptr;
  QComboBox* m_head = nullptr;
  QSlider* m_beta = nullptr;
  QSlider* m_gate = nullptr;
  QSlider* m_gamma = nullptr;
  QSlider* m_shift[3] = {nullptr, nullptr, nullptr};
  QLabel* m_values = nullptr;
  QLineEdit* m_key = nullptr;
  QLineEdit* m_erase = nullptr;
  QLineEdit* m_add = nullptr;
  QLabel* m_error = nullptr;
  NtmFigureWidget* m_figure = nullptr;
};

}  // namespace atlas::ui
