// Image files for the CLI (image_file.h).
#include "app/cli/image_file.h"

#include <algorithm>
#include <cctype>

#ifdef ATLAS_HAVE_UI
#include <QBuffer>
#include <QByteArray>
#include <QImage>
#include <QImageReader>
#include <QSize>
#include <QtGlobal>
#include <unistd.h>

#include <cstdio>
#include <vector>
#endif

#include "app/cli/args.h"
#include "core/formats/input_file.h"
#include "core/input/image_header.h"
#include "core/tensor/error.h"

namespace atlas::cli {

namespace {

bool ends_with_ci(std::string_view s, std::string_view suffix) {
  if (s.size() < suffix.size()) return false;
  for (size_t i = 0; i < suffix.size(); ++i)
    if (std::tolower(static_cast<unsigned char>(s[s.size() - suffix.size() + i])) != suffix[i]) return false;
  return true;
}

// The first 64 KB as lowercase ASCII; UTF-16 text (a BOM) is narrowed by dropping its zero
// bytes, so "<svg" is found in either encoding.
std::string head_lowercase(std::string_view content) {
  std::string_view h = content.substr(0, 64 * 1024);
  const bool utf16 = h.size() >= 2 && ((uint8_t(h[0]) == 0xff && uint8_t(h[1]) == 0xfe) ||
                                       (uint8_t(h[0]) == 0xfe && uint8_t(h[1]) == 0xff));
  std::string out;
  out.reserve(h.size());
  for (size_t i = utf16 ? 2 : 0; i < h.size(); ++i) {
    if (utf16 && h[i] == '\0') continue;
    out += static_cast<char>(std::tolower(static_cast<unsigned char>(h[i])));
  }
  if (out.rfind("\xef\xbb\xbf", 0) == 0) out.erase(0, 3);  // UTF-8 BOM
  return out;
}

#ifdef ATLAS_HAVE_UI
// Qt's and its codecs' own lines (Qt's warnings, libpng's "libpng error: ..." which libpng
// writes to stderr itself, libjpeg's "Corrupt JPEG data") are caught while an image decodes:
// folded into the one-line error when decoding fails, dropped when it succeeds (the header
// checks above have refused what is cut short). stderr is redirected to a temporary file for
// the decode; the CLI runs one thread here.
class DecoderMessages {
 public:
  DecoderMessages() : m_previous(qInstallMessageHandler(&DecoderMessages::collect)) {
    s_lines = &m_lines;
    std::fflush(stderr);
    m_file = std::tmpfile();
    m_saved = m_file ? ::dup(STDERR_FILENO) : -1;
    if (m_saved >= 0) ::dup2(::fileno(m_file), STDERR_FILENO);
  }
  ~DecoderMessages() { restore(); }
  DecoderMessages(const DecoderMessages&) = delete;
  DecoderMessages& operator=(const DecoderMessages&) = delete;
  // Ends the capture; what was said, joined with "; ".
  std::string joined() {
    restore();
    std::string out;
    for (const std::string& l : m_lines) out += (out.empty() ? "" : "; ") + l;
    return out;
  }

 private:
  static void collect(QtMsgType, const QMessageLogContext&, const QString& message) {
    if (s_lines) s_lines->push_back(message.trimmed().toStdString());
  }
  void restore() {
    if (!s_lines) return;
    qInstallMessageHandler(m_previous);
    s_lines = nullptr;
    if (m_saved >= 0) {
      std::fflush(stderr);
      ::dup2(m_saved, STDERR_FILENO);
      ::close(m_saved);
      std::rewind(m_file);
      char line[512];
      while (std::fgets(line, sizeof line, m_file)) {
        std::string l(line);
        while (!l.empty() && (l.back() == '\n' || l.back() == '\r')) l.pop_back();
        if (!l.empty() && m_lines.size() < 8) m_lines.push_back(printable(l));
      }
    }
    if (m_file) std::fclose(m_file);
    m_file = nullptr;
  }
  static inline std::vector<std::string>* s_lines = nullptr;
  std::vector<std::string> m_lines;
  QtMessageHandler m_previous;
  std::FILE* m_file = nullptr;
  int m_saved = -1;
};

// Qt's readers the CLI uses: raster formats whose decoding needs no GUI application. Anything
// else Qt may have a plugin for (svg, svgz, icns, pdf-like ones) is refused by name.
const char* const kRasterFormats[] = {"png", "jpeg", "jpg", "bmp", "gif", "pbm", "pgm", "ppm", "webp", "tiff", "tif"};

bool whitelisted(const QByteArray& format) {
  for (const char* f : kRasterFormats)
    if (format == f) return true;
  return false;
}
#endif

std::string raster_list() {
#ifdef ATLAS_HAVE_UI
  return "PNG, JPEG, BMP, GIF, PPM, PGM, PBM (and WebP, TIFF where Qt has the plugin)";
#else
  return "binary PPM (P6; this atlas was built without Qt, which decodes PNG, JPEG, ...)";
#endif
}

}  // namespace

std::string vector_image_kind(std::string_view content, std::string_view name) {
  if (content.size() >= 2 && uint8_t(content[0]) == 0x1f && uint8_t(content[1]) == 0x8b)
    return ends_with_ci(name, ".svgz") ? "an SVGZ (compressed SVG, vector) image"
                                       : "gzip-compressed data (an SVGZ vector image?)";
  const std::string h = head_lowercase(content);
  if (h.rfind("%pdf", 0) == 0) return "a PDF document";
  if (h.rfind("%!ps", 0) == 0) return "a PostScript (vector) file";
  // An SVG is XML whose root element is <svg>, after an optional declaration, comments and
  // DOCTYPE: text starting with '<' that holds "<svg" near the top. Raster formats are binary
  // (or XPM/XBM text, which never starts with '<').
  const size_t first = h.find_first_not_of(" \t\r\n");
  if (first != std::string::npos && h[first] == '<' && h.find("<svg", first) != std::string::npos)
    return "an SVG (vector) image";
  return {};
}

RgbImage load_image(const std::string& path) {
  // Regular files only, within the image cap, read without blocking (a FIFO never hangs).
  const std::string bytes = read_input_file(path, InputKind::Image);
  if (bytes.empty()) throw AtlasError(printable(path) + ": the image file is empty");
  if (const std::string kind = vector_image_kind(bytes, path); !kind.empty())
    throw AtlasError(printable(path) + " is " + kind + "; the CLI reads raster images: " + raster_list() +
                     " (convert it to PNG first)");
  // PNG, JPEG, GIF, BMP and PPM headers: the size within the pixel cap and the data complete,
  // before any decoder allocates (core/input/image_header.h).
  check_image_header(bytes, printable(path));
#ifdef ATLAS_HAVE_UI
  QByteArray data = QByteArray::fromRawData(bytes.data(), static_cast<qsizetype>(bytes.size()));
  QBuffer buffer(&data);
  buffer.open(QIODevice::ReadOnly);
  const QByteArray format = QImageReader::imageFormat(&buffer);  // by content, not by name
  if (format == "svg" || format == "svgz")
    throw AtlasError(printable(path) + " is an SVG (vector) image; the CLI reads raster images: " + raster_list());
  if (format.isEmpty()) {
    if (bytes.rfind("P6", 0) == 0) return read_ppm(path);  // core's reader names what is wrong
    throw AtlasError(printable(path) + ": not an image the CLI can decode; it reads raster images: " + raster_list());
  }
  if (!whitelisted(format))
    throw AtlasError(printable(path) + " is a " + format.toUpper().toStdString() +
                     " image, which the CLI does not read; it reads raster images: " + raster_list());
  buffer.seek(0);
  QImageReader reader(&buffer, format);
  DecoderMessages messages;
  // The other formats' (WebP, TIFF) size as their reader sees it, before it allocates.
  if (const QSize size = reader.size(); size.isValid())
    check_image_size(size.width(), size.height(), format.toUpper().toStdString(), printable(path));
  QImage img = reader.read();
  if (img.isNull()) {
    if (format == "ppm" && bytes.rfind("P6", 0) == 0) return read_ppm(path);
    const std::string said = messages.joined();
    throw AtlasError(printable(path) + ": cannot decode the " + format.toUpper().toStdString() +
                     " image: " + reader.errorString().toStdString() +
                     (said.empty() ? "" : " (" + said + ")"));
  }
  img = img.convertToFormat(QImage::Format_RGB888);
  RgbImage out{img.height(), img.width(), std::vector<uint8_t>(size_t(img.width()) * size_t(img.height()) * 3)};
  for (int y = 0; y < img.height(); ++y)
    std::copy_n(img.constScanLine(y), size_t(img.width()) * 3, out.rgb.begin() + int64_t(y) * img.width() * 3);
  return out;
#else
  return read_ppm(path);
#endif
}

}  // namespace atlas::cli
