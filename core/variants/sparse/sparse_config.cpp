// The "sparse" config section (see config_json.h):
//   {"sparse": {"pattern": "strided", "stride": 128, "combine": "per_head"}}
// Read by hand (its "auto" stride and [rows, columns] pairs) into SparseConfig. Keys and defaults
// are documented in docs/variants.md ("Sparse Transformer", "Image Transformer local attention").
#include "core/config/config_json.h"
#include "core/config/field_table.h"

namespace atlas::config_json {
namespace {

const EnumTable<SparsePattern> kPatterns = {
    {"none", SparsePattern::None},       {"strided", SparsePattern::Strided},
    {"fixed", SparsePattern::Fixed},     {"local1d", SparsePattern::Local1D},
    {"local1d_unmasked", SparsePattern::Local1DUnmasked}, {"local2d", SparsePattern::Local2D}};
const EnumTable<SparseCombine> kCombines = {{"interleave", SparseCombine::Interleave},
                                            {"union", SparseCombine::Union},
                                            {"per_head", SparseCombine::PerHead}};
const EnumTable<bool> kSummaryOffsets = {{"shared", false}, {"per_head", true}};

const std::vector<std::string> kSparseKeys = {
    "pattern", "stride", "block", "summary", "summary_offsets", "combine", "block_length",
    "filter_width", "query_shape", "flange", "image_width", "image_channels"};

// Largest block / stride / width accepted: far beyond any useful value, small enough that
// products with a length stay inside int64.
constexpr int64_t kMaxExtent = int64_t(1) << 30;

void read_pair(const Json& v, const Reader& r, const std::string& key, int64_t& a, int64_t& b) {
  if (!v.is_array() || v.size() != 2)
    fail(r.origin, key + " must be an array of two integers [rows, columns], " + got(v));
  a = r.integer(v[0], key + "[0]");
  b = r.integer(v[1], key + "[1]");
}

void check_sparse(const SparseConfig& s, const std::string& origin) {
  if (s.stride != 0) check_range(s.stride, 1, kMaxExtent, "sparse.stride", origin);
  check_range(s.block, 1, kMaxExtent, "sparse.block", origin);
  check_range(s.summary, 1, kMaxExtent, "sparse.summary", origin);
  if (s.summary > s.block)
    fail(origin, "sparse.summary (c = " + std::to_string(s.summary) +
                     ") must be <= sparse.block (l = " + std::to_string(s.block) +
                     "): the summary columns are the last c of each block");
  check_range(s.block_length, 1, kMaxExtent, "sparse.block_length", origin);
  check_range(s.filter_width, 0, kMaxExtent, "sparse.filter_width", origin);
  check_range(s.query_h, 1, kMaxExtent, "sparse.query_shape[0]", origin);
  check_range(s.query_w, 1, kMaxExtent, "sparse.query_shape[1]", origin);
  check_range(s.flange_h, 0, kMaxExtent, "sparse.flange[0]", origin);
  check_range(s.flange_w, 0, kMaxExtent, "sparse.flange[1]", origin);
  check_range(s.image_width, 1, kMaxExtent, "sparse.image_width", origin);
  if (s.image_channels != 1 && s.image_channels != 3)
    fail(origin, "sparse.image_channels must be 1 (grey) or 3 (RGB), got " +
                     std::to_string(s.image_channels));
  if (s.image_width % s.image_channels != 0)
    fail(origin, "sparse.image_width (" + std::to_string(s.image_width) +
                     ") must be a multiple of "
                     "sparse.image_channels (" +
                     std::to_string(s.image_channels) + "): a row holds whole pixels");
  if (s.pattern == SparsePattern::Local2D && s.query_w > s.image_width)
    fail(origin, "sparse.query_shape[1] (" + std::to_string(s.query_w) +
                     ") must be <= sparse.image_width (" + std::to_string(s.image_width) + ")");
}

// A pattern other than "none" makes the sparse pattern the config's attention kind; the other
// keys are range-checked either way.
void read_sparse(const Json& o, const Reader& r, ModelConfig& c) {
  check_known_keys(o, kSparseKeys, "sparse", r.origin);
  SparseConfig s;
  for (const auto& item : o.items()) {
    const std::string& k = item.key();
    const Json& v = item.value();
    const std::string key = "sparse." + k;
    if (k == "pattern") s.pattern = r.enumeration(v, key, kPatterns);
    else if (k == "stride") {
      if (v.is_string() && v.get<std::string>() == "auto") s.stride = 0;
      else {
        if (!v.is_number()) fail(r.origin, key + " must be an integer or \"auto\", " + got(v));
        s.stride = r.integer(v, key);
        // 0 is the internal spelling of "auto"; a literal 0 is a mistake, not a request.
        if (s.stride < 1)
          fail(r.origin, key + " must be >= 1 (or \"auto\" for ceil(sqrt(L))), got " +
                             std::to_string(s.stride));
      }
    } else if (k == "block") s.block = r.integer(v, key);
    else if (k == "summary") s.summary = r.integer(v, key);
    else if (k == "summary_offsets") s.per_head_summary = r.enumeration(v, key, kSummaryOffsets);
    else if (k == "combine") s.combine = r.enumeration(v, key, kCombines);
    else if (k == "block_length") s.block_length = r.integer(v, key);
    else if (k == "filter_width") s.filter_width = r.integer(v, key);
    else if (k == "query_shape") read_pair(v, r, key, s.query_h, s.query_w);
    else if (k == "flange") read_pair(v, r, key, s.flange_h, s.flange_w);
    else if (k == "image_width") s.image_width = r.integer(v, key);
    else if (k == "image_channels") s.image_channels = r.integer(v, key);
  }
  check_sparse(s, r.origin);
  if (s.pattern != SparsePattern::None) choose_attention(c, s, "sparse", r.origin);
}

OrderedJson write_sparse(const ModelConfig& c) {
  OrderedJson j;
  j["pattern"] = "none";
  if (!c.sparse()) return j;  // the other keys have no effect without a pattern
  const SparseConfig& s = *c.sparse();
  j["pattern"] = enum_name(s.pattern, kPatterns, "sparse.pattern");
  if (s.stride == 0) j["stride"] = "auto";
  else j["stride"] = s.stride;
  j["block"] = s.block;
  j["summary"] = s.summary;
  j["summary_offsets"] = s.per_head_summary ? "per_head" : "shared";
  j["combine"] = enum_name(s.combine, kCombines, "sparse.combine");
  j["block_length"] = s.block_length;
  j["filter_width"] = s.filter_width;
  j["query_shape"] = {s.query_h, s.query_w};
  j["flange"] = {s.flange_h, s.flange_w};
  j["image_width"] = s.image_width;
  j["image_channels"] = s.image_channels;
  return j;
}

void validate_sparse(const ModelConfig& c, const std::string& origin) {
  if (!c.sparse()) return;
  if (c.sparse()->pattern == SparsePattern::None)
    fail(origin,
         "sparse.pattern \"none\" is dense attention: the attention kind is softmax attention");
  check_sparse(*c.sparse(), origin);
}

}  // namespace

namespace variants {

std::vector<ConfigSection> sparse_sections() {
  return {{"sparse", read_sparse, write_sparse, validate_sparse}};
}

// Its rows of the compatibility table (core/config/variant_choices.h).
std::vector<VariantChoice> sparse_choices() {
  return {{"sparse", "sparse.pattern", [](const ModelConfig& c) { return c.sparse() != nullptr; },
           {"attention", "efficient", "not_plain", "variant"}}};
}

}  // namespace variants

}  // namespace atlas::config_json
