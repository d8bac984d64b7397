#include "ui/main_window/default_input.h"

#include <QFile>

#include "core/model/demos.h"
#include "core/tensor/error.h"

namespace atlas::ui {

QString sampleText() {
  QFile f(":/atlas/samples/sample.txt");
  if (f.open(QIODevice::ReadOnly | QIODevice::Text)) return QString::fromUtf8(f.readAll()).trimmed();
  return "The animal did not cross the street because it was too tired.";
}

QString defaultTextFor(const QString& spec) {
  if (spec.startsWith("demo:")) {
    try {
      return QString::fromStdString(demo_info(spec.mid(5).toStdString()).sample);
    } catch (const AtlasError&) {
      // Unknown demo: loading it reports that; fall back to the sentence.
    }
  }
  return sampleText();
}

}  // namespace atlas::ui
