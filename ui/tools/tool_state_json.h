#pragma once
// Number lists in the tool panels' workspace state (patching, logit attribution): NaN (an
// unfinished cell) is written as null, as JSON has no NaN, and read back as NaN.
#include <QJsonArray>
#include <QJsonValue>
#include <vector>

namespace atlas::ui {

QJsonArray doublesToJson(const std::vector<double>& v);
// Throws AtlasError naming `key` when `v` is not a list of numbers (or nulls), or longer than `maxSize`.
std::vector<double> doublesFromJson(const QJsonValue& v, const char* key, size_t maxSize = size_t(1) << 24);

}  // namespace atlas::ui
