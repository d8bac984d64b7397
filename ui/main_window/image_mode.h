#pragma once
// Image input in the window: Model > Open image…, or a PNG/JPEG/… dropped on the window, while a
// pixel model (local2d, byte vocabulary) or a patch model (ViT) is loaded. The pixels become
// the input tokens through core/input/image_input.h, the patches (and [CLS]) through
// core/input/patch_input.h; the "Input image" dock shows the image as the model sees it (and a
// ViT's attention over the patches); typing in the source box returns to text.
#include <QObject>
#include <QString>
#include <memory>

class QDockWidget;
class QImage;
class QMainWindow;

namespace atlas {
struct RgbImage;
}

namespace atlas::ui {

class ImageInputView;
class InputArea;
class RunController;
class WindowSession;

class ImageMode : public QObject {
  Q_OBJECT
 public:
  ImageMode(QMainWindow* window, WindowSession* session, RunController* runner, InputArea* input);

  // The image becomes the input of the loaded model. False, with the reason in error(), when
  // the file cannot be read, the image is empty or the model does not take images.
  bool open(const QString& path);
  bool set(const QImage& image, const QString& name);
  // A model is in: the image carries over to a pixel or patch model (a ViT starts on the
  // built-in test card), image mode ends for any other. Whether the image is the input now
  // (its run is started; otherwise the window runs the text).
  bool modelLoaded();
  void leave();  // back to the text box (the user typed)
  bool active() const { return m_image != nullptr; }
  QString error() const { return m_error; }

 signals:
  void failed(const QString& message);  // an image the model could not take: image mode ended
  void statusChanged(const QString& text);
  void applied();  // the image is the input; its run follows

 private:
  void apply();  // tokens of the image for the current model, or leaves image mode
  bool refuse(const QString& message);

  QMainWindow* m_window;
  WindowSession* m_session;
  RunController* m_runner;
  InputArea* m_input;
  std::shared_ptr<const RgbImage> m_image;  // null: text input
  QString m_name;
  QString m_error;
  ImageInputView* m_view = nullptr;  // created with the first image
  QDockWidget* m_dock = nullptr;
};

}  // namespace atlas::ui
