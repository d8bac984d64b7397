#include "ui/main_window/image_mode.h"

#include <QByteArray>
#include <QDockWidget>
#include <QFileInfo>
#include <QImage>
#include <QMainWindow>

#include "core/formats/input_file.h"
#include "core/input/image_header.h"
#include "core/input/image_input.h"
#include "core/input/patch_input.h"
#include "core/tensor/error.h"
#include "core/variants/sagan/sagan.h"
#include "ui/main_window/input_area.h"
#include "ui/main_window/run_controller.h"
#include "ui/main_window/window_session.h"
#include "ui/views/image_input_view.h"

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

ImageMode::ImageMode(QMainWindow* window, WindowSession* session, RunController* runner, InputArea* input)
    : QObject(window), m_window(window), m_session(session), m_runner(runner), m_input(input) {
  setObjectName("imageMode");
}

bool ImageMode::refuse(const QString& message) {
  m_error = message;
  return false;
}

bool ImageMode::open(const QString& path) {
  std::string bytes;
  try {
    bytes = read_input_file(path.toStdString(), InputKind::Image);  // a FIFO would block the GUI
    // The size within the pixel cap and the data complete, before Qt decodes (image_header.h).
    check_image_header(bytes, path.toStdString());
  } catch (const AtlasError& e) {
    return refuse(QString::fromStdString(e.what()));
  }
  const QImage image = QImage::fromData(QByteArray::fromRawData(bytes.data(), qsizetype(bytes.size())));
  if (image.isNull()) return refuse(path + ": cannot read the image (missing, or not a format Qt decodes)");
  return set(image, QFileInfo(path).fileName());
}

bool ImageMode::set(const QImage& image, const QString& name) {
  const auto model = m_session->model();
  if (!model)
    return refuse("load a pixel model (e.g. preset:tiny-local2d) or a ViT model (e.g. preset:tiny-vit) "
                  "before opening an image");
  if (image.isNull() || image.width() < 1 || image.height() < 1) return refuse(name + ": the image is empty");
  if (!takesImages(model->config()))
    return refuse(QString::fromStdString(model->config().name) +
                  " takes text, not images: image input needs a ViT (patch-embedding) model, e.g. "
                  "preset:tiny-vit or a Hugging Face ViT directory, or a local2d model with the bytes "
                  "vocabulary, e.g. preset:tiny-local2d (Model > Presets > sparse/efficient)");
  m_image = std::make_shared<const RgbImage>(rgbOf(image));
  m_name = name;
  apply();
  return true;
}

bool ImageMode::modelLoaded() {
  const auto model = m_session->model();
  if (!m_image && model && is_patch_model(model->config())) {  // a ViT reads no text: the test card
    m_image = std::make_shared<const RgbImage>(sagan_synthetic_image(64));
    m_name = "built-in test card";
  }
  if (m_image) apply();
  return active();
}

void ImageMode::apply() {
  const auto model = m_session->model();
  if (!m_image || !model) return;
  const ModelConfig& config = model->config();
  if (!takesImages(config)) {  // a text model was loaded: back to the text box
    leave();
    emit statusChanged("Image input ended: this model takes text");
    return;
  }
  try {
    if (!m_view) {
      m_view = new ImageInputView;
      m_dock = new QDockWidget("Input image", m_window);
      m_dock->setObjectName("imageDock");
      m_dock->setWidget(m_view);
      m_window->addDockWidget(Qt::RightDockWidgetArea, m_dock);
      connect(m_view, &ImageInputView::tokenPicked, m_session, &WindowSession::requestQuery);
      // The ViT overlay reads the run on screen and the layer/head selector when it redraws:
      // it follows every run, selection and query.
      m_view->setAttentionSource([session = m_session] {
        const AttentionSelection sel = session->selection();
        return PatchAttention{session->trace(), sel.layer, sel.head};
      });
      const auto follow = [this] { m_view->setSelectedToken(m_session->query()); };
      connect(m_session, &WindowSession::runShown, m_view, follow);
      connect(m_session, &WindowSession::selectionShown, m_view, follow);
    }
    std::vector<TokenInfo> tokens;
    QString became;  // what the image became, for the input box's hint
    if (is_patch_model(config)) {
      const PatchInput in = patch_input(config, *m_image);
      tokens = in.tokens;
      m_view->setPatchInput(in);
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
      m_view->setInput(in);
      became = QString("%1 x %2 pixels resampled to %3 x %4, %5 tokens (%6)")
                   .arg(m_image->height)
                   .arg(m_image->width)
                   .arg(in.rows)
                   .arg(in.cols)
                   .arg(in.tokens.size())
                   .arg(in.channels == 3 ? "R, G, B per pixel" : "grey");
    }
    m_runner->setSourceTokens(std::make_shared<const std::vector<TokenInfo>>(std::move(tokens)));
    m_view->setSelectedToken(m_session->query());
    m_dock->show();
    // The input box says what the input is now; the first keystroke returns to text.
    m_input->setSource(QString(), /*quiet=*/true);
    m_input->setSourceHint(QString("Image %1: %2. Type to return to text.").arg(m_name, became));
    emit applied();
    m_runner->runNow(QString(), QString());
  } catch (const AtlasError& e) {
    leave();
    emit failed(QString::fromStdString(e.what()));
  }
}

void ImageMode::leave() {
  m_image.reset();
  if (m_dock) m_dock->hide();
  m_runner->setSourceTokens(nullptr);
  m_input->setSourceHint(QString());
}

}  // namespace atlas::ui
