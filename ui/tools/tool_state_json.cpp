// Tool panels' workspace number lists (tool_state_json.h).
#include "ui/tools/tool_state_json.h"

#include <cmath>
#include <limits>
#include <string>

#include "core/tensor/error.h"

namespace atlas::ui {

QJsonArray doublesToJson(const std::vector<double>& v) {
  QJsonArray a;
  for (double x : v) a.append(std::isfinite(x) ? QJsonValue(x) : QJsonValue());
  return a;
}

std::vector<double> doublesFromJson(const QJsonValue& v, const char* key, size_t maxSize) {
  const std::string what = std::string("\"") + key + "\" must be a list of numbers";
  if (!v.isArray()) throw AtlasError(what);
  const QJsonArray a = v.toArray();
  if (size_t(a.size()) > maxSize) throw AtlasError(std::string("\"") + key + "\" is too long");
  std::vector<double> out;
  out.reserve(size_t(a.size()));
  for (const QJsonValue& x : a) {
    if (!x.isDouble() && !x.isNull()) throw AtlasError(what);
    out.push_back(x.isNull() ? std::numeric_limits<double>::quiet_NaN() : x.toDouble());
  }
  return out;
}

}  // namespace atlas::ui
