// Image input in the window (main_window.h): File > Open image…, or drop a PNG/JPEG/… on the
// window, while a pixel model (local2d, byte vocabulary) is loaded. The pixels become the
// input tokens through core/image_input.h; typing in the source box returns to text.
#include <QDockWidget>
#include <QFileDialog>
#include <QFileInfo>
#include <QImage>
#include <QLabel>
#include <QPlainTextEdit>
#include <QSignalBlocker>

#include "error.h"
#include "image_input.h"
#include "image_input_view.h"
#include "main_window.h"
#include "run_controller.h"

namespace atlas::ui {

namespace {

RgbImage rgbOf(const QImage& image) {
  const QImage img = image.convertToFormat(QImage::Format_RGB888);
  RgbImage out{img.height(), img.width(), std::vector<uint8_t>(size_t(img.width()) * size_t(img.height()) * 3)};
  for (int y = 0; y < img.height(); ++y)
    std::copy_n(img.constScanLine(y), img.width() * 3, out.rgb.begin() + int64_t(y) * img.width() * 3);
  return out;
}

}  // namespace

bool MainWindow::openImage(const QString& path) {
  const QImage image(path);
  if (image.isNull()) {
    showError(path + ": cannot read the image (missing, or not a format Qt decodes)");
    return false;
  }
  return setImage(image, QFileInfo(path).fileName());
}

bool MainWindow::setImage(const QImage& image, const QString& name) {
  if (!m_model) {
    showError("load a pixel model (e.g. preset:tiny-local2d) before opening an image");
    return false;
  }
  if (image.isNull() || image.width() < 1 || image.height() < 1) {
    showError(name + ": the image is empty");
    return false;
  }
  if (!is_image_model(m_model->config())) {
    showError(QString::fromStdString(m_model->config().name) +
              " takes text, not images: image input needs a local2d model with the bytes "
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
  if (!is_image_model(m_model->config())) {  // a text model was loaded: back to the text box
    leaveImageMode();
    m_status->setText("Image input ended: this model takes text");
    return;
  }
  try {
    const ImageInput in = image_tokens(m_model->config(), *m_image);
    m_runner->setSourceTokens(std::make_shared<const std::vector<TokenInfo>>(in.tokens));
    if (!m_imageView) {
      m_imageView = new ImageInputView;
      m_imageDock = new QDockWidget("Input image", this);
      m_imageDock->setObjectName("imageDock");
      m_imageDock->setWidget(m_imageView);
      addDockWidget(Qt::RightDockWidgetArea, m_imageDock);
      connect(m_imageView, &ImageInputView::tokenPicked, this, &MainWindow::selectQuery);
    }
    m_imageView->setInput(in);
    m_imageView->setSelectedToken(m_selectedQuery);
    m_imageDock->show();
    // The input box says what the input is now; the first keystroke returns to text.
    const QSignalBlocker block(m_source);
    m_source->clear();
    m_source->setPlaceholderText(QString("Image %1: %2 x %3 pixels resampled to %4 x %5, %6 tokens (%7). "
                                         "Type to return to text.")
                                     .arg(m_imageName)
                                     .arg(m_image->height)
                                     .arg(m_image->width)
                                     .arg(in.rows)
                                     .arg(in.cols)
                                     .arg(in.tokens.size())
                                     .arg(in.channels == 3 ? "R, G, B per pixel" : "grey"));
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
  const QString path = QFileDialog::getOpenFileName(this, "Open an image for a pixel model", QString(),
                                                    "Images (*.png *.jpg *.jpeg *.bmp *.gif *.ppm *.pgm *.webp)");
  if (!path.isEmpty()) openImage(path);
}

}  // namespace atlas::ui
