// Image input in the window (main_window.h): File > Open image…, or drop a PNG/JPEG/… on the
// window, while a pixel model (local2d, byte vocabulary) or a patch model (ViT) is loaded. The
// pixels become the input tokens through core/input/image_input.h, the patches (and [CLS]) through
// core/input/patch_input.h; typing in the source box returns to text.
#include <QDockWidget>
#include <QFileDialog>
#include <QFileInfo>
#include <QImage>
#include <QLabel>
#include <QPlainTextEdit>
#include <QSignalBlocker>

#include "core/formats/input_file.h"
#include "core/tensor/error.h"
#include "core/input/image_input.h"
#include "ui/views/image_input_view.h"
#include "ui/main_window/main_window.h"
#include "core/input/patch_input.h"
#include "ui/main_window/run_controller.h"

namespace atlas::ui {

namespace {

RgbImage rgbOf(const QImage& image) {
  const QImage img = image.convertToFormat(QImage::Format_RGB888);
  RgbImage out{img.height(), img.width(), std::vector<uint8_t>(size_t(img.width()) * size_t(img.height()) * 3)};
  for (int y = 0; y < img.height(); ++y)
    std::copy_n(img.constScanLine(y), img.width() * 3, out.rgb.begin() + int64_t(y) * img.width() * 3);
  return out;
}

bool takesImages(const ModelConfig& c) { return is_image_model(c) || is_patch_model(c); }

}  // namespace

bool MainWindow::openImage(const QString& path) {
  QImage image;
  try {  // through the input-file policy: a FIFO would block the GUI
    const std::string bytes = read_input_file(path.toStdString(), InputKind::Image);
    image = QImage::fromData(QByteArray::fromRawData(bytes.data(), qsizetype(bytes.size())));
  } catch (const AtlasError& e) {
    showError(QString::fromStdString(e.what()));
    return false;
  }
  if (image.isNull()) {
    showError(path + ": cannot read the image (missing, or not a format Qt decodes)");
    return false;
  }
  return setImage(image, QFileInfo(path).fileName());
}

bool MainWindow::setImage(const QImage& image, const QString& name) {
  if (!m_model) {
    showError("load a pixel model (e.g. preset:tiny-local2d) or a ViT model (e.g. preset:tiny-vit) "
              "before opening an image");
    return false;
  }
  if (image.isNull() || image.width() < 1 || image.height() < 1) {
    showError(name + ": the image is empty");
    return false;
  }
  if (!takesImages(m_model->config())) {
    showError(QString::fromStdString(m_model->config().name) +
              " takes text, not images: image input needs a ViT (patch-embedding) model, e.g. "
              "preset:tiny-vit or a Hugging Face ViT directory, or a local2d model with the bytes "
              "vocabulary, e.g. preset:tiny-local2d (Model > Presets > sparse/efficient)");
    return false;
  }
  m_image = std::make_shared<const RgbImage>(rgbOf(image));
  m_imageName = name;
  applyImageTokens();
  return true;
}

void MainWindow::applyImageTokens() {
  if (!m_image || !m_model) return;
  const ModelConfig& config = m_model->config();
  if (!takesImages(config)) {  // a text model was loaded: back to the text box
    leaveImageMode();
    m_status->setText("Image input ended: this model takes text");
    return;
  }
  try {
    if (!m_imageView) {
      m_imageView = new ImageInputView;
      m_imageDock = new QDockWidget("Input image", this);
      m_imageDock->setObjectName("imageDock");
      m_imageDock->setWidget(m_imageView);
      addDockWidget(Qt::RightDockWidgetArea, m_imageDock);
      connect(m_imageView, &ImageInputView::tokenPicked, this, &MainWindow::selectQuery);
      // The ViT overlay reads the run on screen and the layer/head selector when it redraws.
      // Every run and selection change ends in updateViews, which re-applies the query through
      // selectQuery -> setSelectedToken, so the overlay follows without hooks elsewhere.
      m_imageView->setAttentionSource([this] { return PatchAttention{m_trace, m_sel.layer, m_sel.head}; });
      connect(this, &MainWindow::traceShown, m_imageView, &ImageInputView::refreshOverlay);
    }
    std::vector<TokenInfo> tokens;
    QString became;  // what the image became, for the input box's hint
    if (is_patch_model(config)) {
      const PatchInput in = patch_input(config, *m_image);
      tokens = in.tokens;
      m_imageView->setPatchInput(in);
      const auto& patches = config.embeddings.patches;
      became = QString("%1 x %2 pixels resized to %3 x %4, %5 patches of %6%7")
                   .arg(m_image->width)
                   .arg(m_image->height)
                   .arg(in.resized.width)
                   .arg(in.resized.height)
                   .arg(in.grid * in.grid)
                   .arg(patches.size)
                   .arg(patches.cls ? " + [CLS]" : "");
    } else {
      const ImageInput in = image_tokens(config, *m_image);
      tokens = in.tokens;
      m_imageView->setInput(in);
      became = QString("%1 x %2 pixels resampled to %3 x %4, %5 tokens (%6)")
                   .arg(m_image->height)
                   .arg(m_image->width)
                   .arg(in.rows)
                   .arg(in.cols)
                   .arg(in.tokens.size())
                   .arg(in.channels == 3 ? "R, G, B per pixel" : "grey");
    }
    m_runner->setSourceTokens(std::make_shared<const std::vector<TokenInfo>>(std::move(tokens)));
    m_imageView->setSelectedToken(m_selectedQuery);
    m_imageDock->show();
    // The input box says what the input is now; the first keystroke returns to text.
    const QSignalBlocker block(m_source);
    m_source->clear();
    m_source->setPlaceholderText(QString("Image %1: %2. Type to return to text.").arg(m_imageName, became));
    clearError();
    m_runner->runNow(QString(), QString());
  } catch (const AtlasError& e) {
    leaveImageMode();
    showError(QString::fromStdString(e.what()));
  }
}

void MainWindow::leaveImageMode() {
  m_image.reset();
  if (m_imageDock) m_imageDock->hide();
  m_runner->setSourceTokens(nullptr);
  m_source->setPlaceholderText(kSourcePlaceholder);
}

void MainWindow::onSourceEdited() {
  if (m_image) leaveImageMode();  // typing takes the input back from the image
  onTextChanged();
}

void MainWindow::openImageDialog() {
  const QString path = QFileDialog::getOpenFileName(this, "Open an image for a pixel or ViT model", QString(),
                                                    "Images (*.png *.jpg *.jpeg *.bmp *.gif *.ppm *.pgm *.webp)");
  if (!path.isEmpty()) openImage(path);
}

}  // namespace atlas::ui
