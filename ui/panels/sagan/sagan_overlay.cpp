// SAGAN attention overlay (see sagan_overlay.h).
#include "ui/panels/sagan/sagan_overlay.h"

#include <QByteArray>
#include <QCheckBox>
#include <QFileDialog>
#include <QFileInfo>
#include <QHBoxLayout>
#include <QLabel>
#include <QMessageBox>
#include <QMouseEvent>
#include <QPainter>
#include <QPushButton>
#include <QSlider>
#include <QVBoxLayout>
#include <algorithm>
#include <cmath>

#include "ui/export/painted_figure.h"
#include "ui/dialog_folders.h"
#include "ui/views/colormap.h"
#include "core/tensor/error.h"
#include "core/formats/input_file.h"
#include "core/input/image_header.h"
#include "core/formats/npy.h"
#include "core/model/params.h"
#include "core/model/presets.h"
#include "core/variants/sagan/sagan.h"
#include "core/variants/sagan/sagan_arrays.h"
#include "ui/panels/panel_registry.h"

namespace atlas::ui {

namespace {

const TracedArray& need(const Trace& t, const char* name) {
  const TracedArray* a = t.find(name);
  if (!a) throw AtlasError(std::string("the trace has no ") + name + " array (not a SAGAN run)");
  return *a;
}

QImage imageOf(const Tensor& img) {  // [S, S, 3] in [0, 1]
  const int h = int(img.shape[0]), w = int(img.shape[1]);
  QImage out(w, h, QImage::Format_RGB32);
  for (int y = 0; y < h; ++y)
    for (int x = 0; x < w; ++x) {
      const float* px = &img.data[size_t((y * w + x) * 3)];
      out.setPixel(x, y, qRgb(int(std::lround(px[0] * 255)), int(std::lround(px[1] * 255)), int(std::lround(px[2] * 255))));
    }
  return out;
}

// The query's attention row as a key grid [Hk, Wk] (keys are square grids: S or S/2).
Tensor attentionGrid(const Trace& t, SaganOverlaySpec spec) {
  const Tensor& img = need(t, sagan_arrays::kImage).tensor;
  const Tensor& att = need(t, sagan_arrays::kAttention).tensor;
  const int64_t S = img.shape[0], Nk = att.shape[2];
  const int64_t k = int64_t(std::lround(std::sqrt(double(Nk))));
  const int64_t row = std::clamp<int64_t>(spec.row, 0, S - 1), col = std::clamp<int64_t>(spec.col, 0, S - 1);
  Tensor grid({k, k});
  std::copy_n(att.data.begin() + (row * S + col) * Nk, Nk, grid.data.begin());
  return grid;
}

}  // namespace

void paintSaganOverlay(QPainter& p, const QRectF& rect, const Trace& trace, SaganOverlaySpec spec) {
  p.fillRect(rect, Qt::white);
  const Tensor& img = need(trace, sagan_arrays::kImage).tensor;
  const int S = int(img.shape[0]);
  const QImage image = imageOf(img);
  const Tensor grid = attentionGrid(trace, spec);
  const int k = int(grid.shape[0]);
  const float mx = std::max(1e-12f, *std::max_element(grid.data.begin(), grid.data.end()));
  const double side = std::min(rect.width() / 2 - 12, rect.height() - 36);
  const QRectF left(rect.left() + 6, rect.top() + 24, side, side);
  const QRectF right(rect.left() + rect.width() / 2 + 6, rect.top() + 24, side, side);
  QFont f = p.font();
  f.setPointSizeF(9);
  p.setFont(f);
  p.setPen(Qt::black);
  p.drawText(QRectF(left.left(), rect.top(), side, 20), Qt::AlignCenter,
             QString("query location (%1, %2)").arg(spec.row).arg(spec.col));
  p.drawText(QRectF(right.left(), rect.top(), side, 20), Qt::AlignCenter,
             QString("attention over %1 x %2 key locations (max %3)").arg(k).arg(k).arg(double(mx), 0, 'g', 3));
  for (const QRectF& r : {left, right}) p.drawImage(r, image);
  const ColorLut lut(Colormap::Magma);
  const double cell = side / k;
  for (int y = 0; y < k; ++y)
    for (int x = 0; x < k; ++x) {
      const float t = grid.data[size_t(y * k + x)] / mx;
      QColor c = lut.color(t);
      c.setAlphaF(float(spec.opacity * (0.25 + 0.75 * t)));
      p.fillRect(QRectF(right.left() + x * cell, right.top() + y * cell, cell + 0.02, cell + 0.02), c);
    }
  const double px = side / S;
  for (const QRectF& r : {left, right}) {
    const QPointF centre(r.left() + (spec.col + 0.5) * px, r.top() + (spec.row + 0.5) * px);
    p.setPen(QPen(Qt::white, 2.5));
    p.drawEllipse(centre, std::max(3.0, px * 0.8), std::max(3.0, px * 0.8));
    p.setPen(QPen(QColor(0, 160, 255), 1.2));
    p.drawEllipse(centre, std::max(3.0, px * 0.8), std::max(3.0, px * 0.8));
  }
}

void exportSaganOverlay(const Trace& trace, SaganOverlaySpec spec, const QString& path) {
  const QString ext = QFileInfo(path).suffix().toLower();
  if (ext == "npy") {
    write_npy(path.toStdString(), attentionGrid(trace, spec), DType::F32);
    return;
  }
  const QRectF page(0, 0, 8 * 72, 4.4 * 72);
  writePaintedFigure(path, ext, page, "SAGAN attention overlay",
                     [&](QPainter& p) { paintSaganOverlay(p, page, trace, spec); });
}

SaganOverlay::SaganOverlay(QWidget* parent) : QWidget(parent) {
  setMinimumSize(640, 360);
  rerun();
  m_spec.row = m_spec.col = gridSize() / 2;
}

int SaganOverlay::gridSize() const { return int(need(m_result.trace, sagan_arrays::kImage).tensor.shape[0]); }

void SaganOverlay::setImage(const QImage& image) {
  m_image = image;
  rerun();
}

void SaganOverlay::setPoolKeys(bool pool) {
  m_pool = pool;
  rerun();
}

void SaganOverlay::setQuery(int row, int col) {
  const int S = gridSize();
  m_spec.row = std::clamp(row, 0, S - 1);
  m_spec.col = std::clamp(col, 0, S - 1);
  update();
  emit queryChanged(m_spec.row, m_spec.col);
}

void SaganOverlay::rerun() {
  ModelConfig c = preset_config("sagan-small");
  c.sagan()->pool_keys = m_pool;
  RgbImage rgb = sagan_synthetic_image(c.sagan()->image_size);
  if (!m_image.isNull()) {
    const QImage img = m_image.convertToFormat(QImage::Format_RGB888);
    rgb = RgbImage{img.height(), img.width(), std::vector<uint8_t>(size_t(img.width()) * img.height() * 3)};
    for (int y = 0; y < img.height(); ++y)
      std::copy_n(img.constScanLine(y), img.width() * 3, rgb.rgb.begin() + int64_t(y) * img.width() * 3);
  }
  m_result = sagan_forward(c, init_params(c, c.seed), rgb, RunOptions{});
  update();
}

QRectF SaganOverlay::figureRect() const { return QRectF(rect()); }

bool SaganOverlay::queryAt(const QPointF& pos, int* row, int* col) const {
  // Same geometry as paintSaganOverlay: the left image square, and the right one.
  const QRectF r = figureRect();
  const double side = std::min(r.width() / 2 - 12, r.height() - 36);
  for (double left : {r.left() + 6, r.left() + r.width() / 2 + 6}) {
    const QRectF sq(left, r.top() + 24, side, side);
    if (!sq.contains(pos)) continue;
    const int S = gridSize();
    *row = std::clamp(int((pos.y() - sq.top()) / side * S), 0, S - 1);
    *col = std::clamp(int((pos.x() - sq.left()) / side * S), 0, S - 1);
    return true;
  }
  return false;
}

void SaganOverlay::paintEvent(QPaintEvent*) {
  QPainter p(this);
  paintSaganOverlay(p, figureRect(), m_result.trace, m_spec);
}

void SaganOverlay::mousePressEvent(QMouseEvent* e) {
  int row = 0, col = 0;
  if (queryAt(e->position(), &row, &col)) setQuery(row, col);
}

QWidget* makeSaganExplorer(QWidget* parent) {
  auto* window = new QWidget(parent, Qt::Window);
  window->setWindowTitle("Self-Attention GAN explorer");
  auto* overlay = new SaganOverlay(window);
  auto* open = new QPushButton("Open image\u2026");
  auto* card = new QPushButton("Test card");
  auto* pool = new QCheckBox("2x2-pool keys and values");
  pool->setChecked(true);
  auto* opacity = new QSlider(Qt::Horizontal);
  opacity->setRange(0, 100);
  opacity->setValue(65);
  auto* exportButton = new QPushButton("Export\u2026");
  auto* hint = new QLabel("Click the image to choose the query location.");
  auto* bar = new QHBoxLayout;
  for (QWidget* w : std::initializer_list<QWidget*>{open, card, pool, new QLabel("Overlay"), opacity, exportButton})
    bar->addWidget(w);
  auto* layout = new QVBoxLayout(window);
  layout->addLayout(bar);
  layout->addWidget(hint);
  layout->addWidget(overlay, 1);
  QObject::connect(open, &QPushButton::clicked, window, [window, overlay] {
    const QString path = QFileDialog::getOpenFileName(window, "Open an image", dialogFolder(DialogPurpose::Image),
                                                      "Images (*.png *.jpg *.jpeg *.bmp *.ppm *.gif)");
    if (path.isEmpty()) return;
    std::string bytes;  // through the input-file policy and the header checks, as openImage
    try {
      bytes = read_input_file(path.toStdString(), InputKind::Image);
      check_image_header(bytes, path.toStdString());
    } catch (const AtlasError& e) {
      QMessageBox::warning(window, "Open image", QString::fromStdString(e.what()));
      return;
    }
    const QImage img = QImage::fromData(QByteArray::fromRawData(bytes.data(), qsizetype(bytes.size())));
    if (img.isNull()) {
      QMessageBox::warning(window, "Open image", path + ": not an image Qt can decode");
      return;
    }
    overlay->setImage(img);
  });
  QObject::connect(card, &QPushButton::clicked, overlay, [overlay] { overlay->setImage(QImage()); });
  QObject::connect(pool, &QCheckBox::toggled, overlay, [overlay](bool on) { overlay->setPoolKeys(on); });
  QObject::connect(opacity, &QSlider::valueChanged, overlay, [overlay](int v) { overlay->setOpacity(v / 100.0); });
  QObject::connect(exportButton, &QPushButton::clicked, window, [window, overlay] {
    const QString path = QFileDialog::getSaveFileName(window, "Export the overlay",
                                                      dialogStart(DialogPurpose::Export, "sagan.svg"),
                                                      "Figures (*.svg *.pdf *.png);;Attention row (*.npy)");
    if (path.isEmpty()) return;
    rememberDialogChoice(DialogPurpose::Export, path);
    try {
      overlay->exportTo(path);
    } catch (const AtlasError& e) {
      QMessageBox::warning(window, "Export failed", QString::fromStdString(e.what()));
    }
  });
  return window;
}

namespace variants {
// View > Self-Attention GAN explorer: the sagan-small block on the test card or an image.
std::vector<PanelEntry> sagan_panels() {
  VariantExplorer x;
  x.menuText = "&Self-Attention GAN explorer\u2026";
  x.open = [](QWidget* parent, const ExplorerInput&) {
    QWidget* window = makeSaganExplorer(parent);
    window->setAttribute(Qt::WA_DeleteOnClose);
    window->show();
  };
  return {x};
}
}  // namespace variants

}  // namespace atlas::ui
