// Image files for the CLI (image_file.h).
#include "app/cli/image_file.h"

#include <algorithm>

#ifdef ATLAS_HAVE_UI
#include <QImage>
#include <QString>
#endif

#include "core/tensor/error.h"

namespace atlas::cli {

RgbImage load_image(const std::string& path) {
#ifdef ATLAS_HAVE_UI
  QImage img(QString::fromStdString(path));
  if (img.isNull()) {
    if (path.size() > 4 && path.substr(path.size() - 4) == ".ppm") return read_ppm(path);
    throw AtlasError(path + ": cannot read the image (missing, or not a format Qt decodes)");
  }
  img = img.convertToFormat(QImage::Format_RGB888);
  RgbImage out{img.height(), img.width(), std::vector<uint8_t>(size_t(img.width()) * img.height() * 3)};
  for (int y = 0; y < img.height(); ++y)
    std::copy_n(img.constScanLine(y), img.width() * 3, out.rgb.begin() + int64_t(y) * img.width() * 3);
  return out;
#else
  return read_ppm(path);
#endif
}

}  // namespace atlas::cli
