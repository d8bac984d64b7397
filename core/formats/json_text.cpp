#include "core/formats/json_text.h"

#include <cstdio>
#include <utility>
#include <vector>

#include "core/tensor/error.h"

namespace atlas {

using Json = nlohmann::json;

size_t utf8_sequence_length(std::string_view s, size_t pos) {
  auto byte = [&](size_t i) { return static_cast<unsigned char>(s[i]); };
  unsigned char c = byte(pos);
  if (c < 0x80) return 1;
  size_t n = c >= 0xF0 ? 4 : c >= 0xE0 ? 3 : c >= 0xC2 ? 2 : 0;
  if (n == 0 || c > 0xF4 || pos + n > s.size()) return 0;
  for (size_t i = 1; i < n; ++i)
    if ((byte(pos + i) & 0xC0) != 0x80) return 0;
  unsigned char c1 = byte(pos + 1);
  if (c == 0xE0 && c1 < 0xA0) return 0;  // overlong
  if (c == 0xED && c1 > 0x9F) return 0;  // UTF-16 surrogate
  if (c == 0xF0 && c1 < 0x90) return 0;  // overlong
  if (c == 0xF4 && c1 > 0x8F) return 0;  // above U+10FFFF
  return n;
}

// Error messages go to dialogs and JSON manifests, so they must be valid UTF-8 even when they
// quote a broken input.
std::string escape_invalid_utf8(std::string_view s) {
  std::string out;
  for (size_t i = 0; i < s.size();) {
    size_t n = utf8_sequence_length(s, i);
    if (n == 0) {
      char buf[8];
      std::snprintf(buf, sizeof buf, "\\x%02X", static_cast<unsigned char>(s[i]));
      out += buf;
      ++i;
    } else {
      out.append(s, i, n);
      i += n;
    }
  }
  return out;
}

namespace {

// A key as the user would type it in JSON: quoted, control characters escaped.
std::string quote(const std::string& s) {
  return Json(s).dump(-1, ' ', false, Json::error_handler_t::replace);
}

// nlohmann's own DOM parser keeps the last of duplicate keys silently and reports number
// overflow without a position; this SAX handler can reject duplicates, caps nesting depth and
// keeps the byte position of every error.
class DomBuilder {
 public:
  explicit DomBuilder(JsonLimits limits) : limits_(limits) {}
  Json root;
  std::string error;  // empty on success
  size_t error_byte = 0;
  bool error_has_position = false;

  bool null() { return put(nullptr); }
  bool boolean(bool v) { return put(v); }
  bool number_integer(Json::number_integer_t v) { return put(v); }
  bool number_unsigned(Json::number_unsigned_t v) { return put(v); }
  bool number_float(Json::number_float_t v, const std::string&) { return put(v); }
  bool string(std::string& v) { return put(std::move(v)); }
  bool binary(Json::binary_t&) { return set_error("binary values are not JSON"); }
  bool start_object(size_t) { return open(Json::object()); }
  bool start_array(size_t) { return open(Json::array()); }
  bool end_object() { return close(); }
  bool end_array() { return close(); }
  bool key(std::string& k) {
    const Json& object = *stack_.back().value;
    if (limits_.refuse_duplicate_keys && object.contains(k)) {
      std::string where = stack_.size() == 1 ? "" : " in " + path_of_top();
      return set_error("duplicate key " + quote(k) + where + "; each key may appear only once");
    }
    stack_.back().pending_key = std::move(k);
    return true;
  }
  bool parse_error(size_t position, const std::string&, const nlohmann::detail::exception& ex) {
    error = ex.what();
    error_byte = position;
    error_has_position = true;
    return false;
  }

 private:
  JsonLimits limits_;
  struct Open {
    Json* value;
    std::string pending_key;  // objects: key of the next value
  };
  std::vector<Open> stack_;

  bool set_error(std::string message) {
    error = std::move(message);
    return false;
  }
  std::string path_of_top() const {
    std::string path;
    for (size_t i = 0; i + 1 < stack_.size(); ++i)
      if (stack_[i].value->is_object()) path += (path.empty() ? "" : ".") + stack_[i].pending_key;
      else path += "[" + std::to_string(stack_[i].value->size() - 1) + "]";
    return quote(path);
  }
  Json* place(Json&& v) {
    if (stack_.empty()) {
      root = std::move(v);
      return &root;
    }
    Open& top = stack_.back();
    if (top.value->is_array()) {
      top.value->push_back(std::move(v));
      return &top.value->back();
    }
    Json& slot = (*top.value)[top.pending_key];  // a repeated key (when allowed): the last wins
    slot = std::move(v);
    return &slot;
  }
  bool put(Json&& v) { return place(std::move(v)) != nullptr; }
  bool open(Json&& container) {
    if (stack_.size() >= limits_.max_depth)
      return set_error("JSON nesting deeper than " + std::to_string(limits_.max_depth) + " levels");
    Json* p = place(std::move(container));
    stack_.push_back({p, {}});
    return true;
  }
  bool close() {
    stack_.pop_back();
    return true;
  }
};

}  // namespace

Json parse_json_text(std::string_view text, const std::string& origin, JsonLimits limits) {
  DomBuilder builder(limits);
  bool ok = Json::sax_parse(text.begin(), text.end(), &builder);
  if (ok) return std::move(builder.root);
  const std::string prefix_origin = origin.empty() ? "" : origin + ": ";
  if (!builder.error_has_position) throw AtlasError(prefix_origin + builder.error);
  // nlohmann's text: "[json.exception.parse_error.101] parse error at line 1, column 5: ...";
  // keep its line/column and description, drop the exception id.
  std::string detail = builder.error;
  auto close = detail.find("] ");
  if (detail.rfind("[json.exception", 0) == 0 && close != std::string::npos)
    detail.erase(0, close + 2);
  std::string where = "at byte " + std::to_string(builder.error_byte);
  const std::string prefix = "parse error at ";
  if (detail.rfind(prefix, 0) == 0) {
    if (auto colon = detail.find(": "); colon != std::string::npos) {
      where += " (" + detail.substr(prefix.size(), colon - prefix.size()) + ")";
      detail.erase(0, colon + 2);
    }
  }
  throw AtlasError(prefix_origin + "malformed JSON " + where + ": " + escape_invalid_utf8(detail));
}


}  // namespace atlas
