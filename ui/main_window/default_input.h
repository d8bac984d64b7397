#pragma once
// What the window opens on: a trained demo, so a newcomer sees learned attention, with the
// input its task was trained on, or the sample sentence.
#include <QString>

namespace atlas::ui {

inline QString defaultModelSpec() { return "demo:induction"; }
QString sampleText();  // assets/samples/sample.txt, compiled in
// The input to show with `spec`: a demo's own sample (typed as its task was trained), else the
// sample sentence.
QString defaultTextFor(const QString& spec);

}  // namespace atlas::ui
