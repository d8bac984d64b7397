#pragma once
// A duration as a person reads it in a status line: "less than 1 s", "12 s", "3 min 20 s",
// "1 h 5 min". The long analyses (sweep, patching) say with it how long they will take.
#include <QString>

namespace atlas::ui {

QString durationText(double seconds);

}  // namespace atlas::ui
