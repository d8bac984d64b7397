// Not a test: reads an SVG file with Qt's strict XML reader (tests/svg_xml.h) and prints what a
// reader sees, for the CLI tests (tests/app, which do not link Qt): "ok" or "error MESSAGE",
// then "title TEXT" and one "text TEXT" per <text> element, backslashes and line breaks
// escaped (\\, \n, \r) so each stays one line.
#include <QFile>
#include <cstdio>

#include "tests/svg_xml.h"

namespace {

std::string oneLine(const QString& s) {
  std::string out;
  for (char c : s.toStdString()) {
    if (c == '\\') out += "\\\\";
    else if (c == '\n') out += "\\n";
    else if (c == '\r') out += "\\r";
    else out += c;
  }
  return out;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: svg_text_dump FILE.svg\n");
    return 2;
  }
  QFile f(QString::fromLocal8Bit(argv[1]));
  if (!f.open(QIODevice::ReadOnly)) {
    std::printf("error cannot open %s\n", argv[1]);
    return 0;
  }
  const atlas_test::SvgXml svg = atlas_test::readSvgXml(f.readAll());
  std::printf("%s\n", svg.wellFormed() ? "ok" : ("error " + oneLine(svg.error)).c_str());
  std::printf("title %s\n", oneLine(svg.title).c_str());
  for (const QString& t : svg.texts) std::printf("text %s\n", oneLine(t).c_str());
  return 0;
}
