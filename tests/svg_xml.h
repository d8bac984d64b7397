#pragma once
// An SVG file read as XML by QXmlStreamReader (a strict XML 1.0 parser: it refuses "&" alone,
// "<" in text, and characters XML forbids such as U+0001): whether it is well-formed, and the
// text of its <title> and of every <text> element, entities resolved, as a reader shows it.
// Shared by the UI tests and the CLI tests (which link Qt Core when the UI is built).
#include <QByteArray>
#include <QString>
#include <QStringList>
#include <QXmlStreamReader>
#include <string>

namespace atlas_test {

struct SvgXml {
  QString error;        // empty: well-formed
  QString title;        // the first <title>
  QStringList texts;    // every <text> element's content, in document order
  bool wellFormed() const { return error.isEmpty(); }
  bool showsText(const QString& s) const { return texts.contains(s); }
  std::string describe() const { return (error.isEmpty() ? "texts: " + texts.join(" | ") : error).toStdString(); }
};

inline SvgXml readSvgXml(const QByteArray& bytes) {
  SvgXml out;
  QXmlStreamReader r(bytes);
  bool sawTitle = false, sawSvg = false;
  while (!r.atEnd()) {
    if (r.readNext() != QXmlStreamReader::StartElement) continue;
    if (r.name() == u"svg") sawSvg = true;
    if (r.name() == u"text") {
      out.texts << r.readElementText(QXmlStreamReader::IncludeChildElements);
    } else if (r.name() == u"title" && !sawTitle) {
      sawTitle = true;
      out.title = r.readElementText();
    }
  }
  if (r.hasError())
    out.error = QString("not well-formed XML at line %1, column %2: %3")
                    .arg(r.lineNumber())
                    .arg(r.columnNumber())
                    .arg(r.errorString());
  else if (!sawSvg)
    out.error = "no <svg> element";
  return out;
}

}  // namespace atlas_test
