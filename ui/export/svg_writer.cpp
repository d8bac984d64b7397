#include "ui/export/svg_writer.h"

#include <QBuffer>
#include <QPainter>
#include <QSvgGenerator>
#include <QXmlStreamReader>
#include <cmath>
#include <utility>

#include "core/tensor/error.h"

namespace atlas::ui {
namespace {

constexpr char16_t kControlPictures = 0x2400;  // U+2400 + c shows the C0 control c
constexpr char16_t kDeleteSymbol = 0x2421;     // "␡"
constexpr char16_t kReplacement = 0xFFFD;

// QSvgGenerator writes its title and description unescaped (and "Qt SVG Document" when none
// is given): it is given these plain markers, which are then replaced by the escaped text.
constexpr char kTitleMarker[] = "atlas-svg-title-marker";
constexpr char kDescMarker[] = "atlas-svg-desc-marker";

}  // namespace

QString figureText(const QString& s) {
  QString out;
  out.reserve(s.size());
  for (qsizetype i = 0; i < s.size(); ++i) {
    const char16_t c = s[i].unicode();
    if (c < 0x20 && c != u'\t' && c != u'\n') {
      out += QChar(char16_t(kControlPictures + c));
    } else if (c == 0x7F) {
      out += QChar(kDeleteSymbol);
    } else if (c == 0xFFFE || c == 0xFFFF) {
      out += QChar(kReplacement);
    } else if (QChar::isHighSurrogate(c) && i + 1 < s.size() && QChar::isLowSurrogate(s[i + 1].unicode())) {
      out += s[i];
      out += s[++i];
    } else if (QChar::isSurrogate(c)) {
      out += QChar(kReplacement);  // unpaired: no character at all
    } else {
      out += s[i];
    }
  }
  return out;
}

QString xmlText(const QString& s) { return figureText(s).toHtmlEscaped(); }

QByteArray xmlSafeUtf8(const QByteArray& utf8) {
  QByteArray out;
  out.reserve(utf8.size());
  for (qsizetype i = 0; i < utf8.size(); ++i) {
    const auto b = static_cast<unsigned char>(utf8[i]);
    if (b < 0x20 && b != '\t' && b != '\n') {
      out += QString(QChar(char16_t(kControlPictures + b))).toUtf8();
    } else if (b == 0xEF && i + 2 < utf8.size() && static_cast<unsigned char>(utf8[i + 1]) == 0xBF &&
               (static_cast<unsigned char>(utf8[i + 2]) == 0xBE || static_cast<unsigned char>(utf8[i + 2]) == 0xBF)) {
      out += "\xEF\xBF\xBD";  // U+FFFE / U+FFFF -> U+FFFD
      i += 2;
    } else {
      out += static_cast<char>(b);
    }
  }
  return out;
}

QString xmlWellFormedError(const QByteArray& xml) {
  QXmlStreamReader reader(xml);
  while (!reader.atEnd()) reader.readNext();
  if (!reader.hasError()) return {};
  return QString("line %1, column %2: %3").arg(reader.lineNumber()).arg(reader.columnNumber()).arg(reader.errorString());
}

QByteArray renderSvg(const QRectF& page, const QString& title, const QString& desc,
                     const std::function<void(QPainter&)>& paint, const std::string& where) {
  QBuffer buffer;
  buffer.open(QIODevice::WriteOnly);
  {
    QSvgGenerator gen;
    gen.setOutputDevice(&buffer);
    gen.setSize(QSize(static_cast<int>(std::ceil(page.width())), static_cast<int>(std::ceil(page.height()))));
    gen.setViewBox(page);
    gen.setResolution(72);
    gen.setTitle(kTitleMarker);
    gen.setDescription(kDescMarker);
    QPainter p;
    if (!p.begin(&gen)) throw AtlasError(where + ": cannot start drawing the SVG");
    paint(p);
    p.end();  // writes the closing tags
  }
  QByteArray svg = xmlSafeUtf8(buffer.data());
  for (const auto& [marker, text] : {std::pair{kTitleMarker, title}, std::pair{kDescMarker, desc}}) {
    const QByteArray element = QByteArray(">") + marker + "<";
    const qsizetype at = svg.indexOf(element);
    if (at < 0) throw AtlasError(where + ": internal error: the SVG generator did not write its <title> and <desc>");
    svg.replace(at, element.size(), ">" + xmlText(text).toUtf8() + "<");
  }
  if (const QString error = xmlWellFormedError(svg); !error.isEmpty())
    throw AtlasError(where + ": internal error: the SVG is not well-formed XML (" + error.toStdString() + ")");
  return svg;
}

}  // namespace atlas::ui
