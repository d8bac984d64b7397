#pragma once
// Every SVG the app and the CLI write (figures, panel plots, painted figures, the clipboard)
// comes from renderSvg, so user text (titles, token labels, axis labels, panel text) reaches
// the file as well-formed XML whatever it holds. QSvgGenerator (Qt 6.4) escapes the text it
// draws (&, <, >) but writes <title> and <desc> as given, and passes through characters
// XML 1.0 does not allow at all (U+0001, U+FFFF): a title "Q & K <layer 0>" or a token
// holding a control character made a file no XML reader opens.
#include <QByteArray>
#include <QRectF>
#include <QString>
#include <functional>

class QPainter;

namespace atlas::ui {

// `s` as figures show it: characters XML 1.0 cannot hold (and that draw as nothing) made
// visible. A C0 control character other than tab and line feed becomes its Control Pictures
// symbol (U+0001 -> U+2401 "␁", NUL -> "␀", CR -> "␍"), DEL becomes "␡" (U+2421), and the
// noncharacters U+FFFE, U+FFFF and unpaired surrogates become U+FFFD. Everything else is kept.
// Titles and token labels go through it before they are drawn, so PNG, PDF and SVG agree.
QString figureText(const QString& s);

// `s` as XML character data: figureText, then &, < and > escaped.
QString xmlText(const QString& s);

// The SVG of `paint` over `page` (points; 72 per inch): `title` and `desc` written as escaped
// <title> and <desc>, any character XML forbids that the painter passed through replaced as
// figureText replaces it, and the result checked to parse as XML. Throws AtlasError naming
// `where` when drawing cannot start or (a defect) the result is not well-formed.
QByteArray renderSvg(const QRectF& page, const QString& title, const QString& desc,
                     const std::function<void(QPainter&)>& paint, const std::string& where);

// UTF-8 bytes with the characters XML 1.0 forbids replaced as figureText replaces them
// (renderSvg's last pass; the input is QSvgGenerator's output, valid UTF-8).
QByteArray xmlSafeUtf8(const QByteArray& utf8);

// Empty when `xml` is well-formed XML; otherwise "line L, column C: what is wrong".
QString xmlWellFormedError(const QByteArray& xml);

}  // namespace atlas::ui
