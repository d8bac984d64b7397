// make_llama_gguf: writes a GGUF v3 file of a Llama-family model with random weights, laid out
// the way llama.cpp's own converter and quantizer lay out general.architecture "llama", so that
// llama.cpp (and Atlas) load and run it: the benchmark files for bench/quant_vs_llamacpp.sh.
//
//   make_llama_gguf --shape 1b|8b --type q8_0|q4_k_m|f16|bf16 [--layers N] [--seed S] -o FILE
//
// Shapes: 1b = Llama-3.2-1B (16 layers, d 2048, 32 heads on 8 KV heads, SwiGLU 8192, vocab
// 128256, tied embeddings: no output.weight, rope factor 32); 8b = Llama-3.1-8B (32 layers,
// d 4096, 32/8 heads, SwiGLU 14336, vocab 128256, untied output.weight, rope factor 8).
// --layers N overrides the block count (quick small files).
//
// Tensor types per --type, as llama.cpp's tools produce them:
//   f16, bf16: every matrix F16 / BF16 (convert_hf_to_gguf --outtype), vectors F32.
//   q8_0:      every matrix Q8_0 (llama-quantize Q8_0; the tied embedding stays Q8_0).
//   q4_k_m:    llama-quantize Q4_K_M: output.weight Q6_K, and token_embd.weight Q6_K too when
//              it doubles as the output (tied), else Q4_K; attn_v and ffn_down Q6_K in the
//              layers where use_more_bits(i, n) = i < n/8 || i >= 7n/8 || (i - n/8) % 3 == 2,
//              Q4_K elsewhere; every other matrix Q4_K.
// Vectors (the RMSNorm weights, all 1.0, and rope_freqs.weight, Llama 3's per-frequency
// divisors for its "llama3" rope scaling) are F32.
//
// Weights are random with a standard deviation near 0.02 (uniform quants under finite f16
// scales), so activations stay finite through 32 layers; everything is a function of --seed
// and the tensor's index, nothing else.
//
// Tokenizer: tokenizer.ggml.model "gpt2", pre "llama-bpe", a byte-level BPE vocabulary of exactly
// 128256 entries: the 256 byte tokens in GPT-2's bytes_to_unicode order, 127744 merges (first
// learnt by BPE from a built-in English word list with Zipf weights, then digit groups,
// whitespace and punctuation runs, then extensions of word tokens by plausible letters), and
// Llama 3's 256 special tokens from <|begin_of_text|> = 128000 (bos) and <|end_of_text|> =
// 128001 (eos). It is a valid vocabulary, not Llama 3's.
//
// Standalone on purpose (g++ -std=c++20 -O2 bench/make_llama_gguf.cpp -o make_llama_gguf).
#include <algorithm>
#include <array>
#include <cctype>
#include <cerrno>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <map>
#include <stdexcept>
#include <string>
#include <tuple>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

namespace {

// ---------------------------------------------------------------------------------------------
// Small helpers

uint64_t splitmix64(uint64_t& s) {
  uint64_t z = (s += 0x9e3779b97f4a7c15ull);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}

struct Rng {  // xoshiro256**
  uint64_t s[4];
  explicit Rng(uint64_t seed) {
    for (uint64_t& x : s) x = splitmix64(seed);
  }
  static uint64_t rotl(uint64_t x, int k) { return (x << k) | (x >> (64 - k)); }
  uint64_t next() {
    const uint64_t r = rotl(s[1] * 5, 7) * 9, t = s[1] << 17;
    s[2] ^= s[0];
    s[3] ^= s[1];
    s[1] ^= s[2];
    s[0] ^= s[3];
    s[2] ^= t;
    s[3] = rotl(s[3], 45);
    return r;
  }
  double uniform() { return double(next() >> 11) * (1.0 / 9007199254740992.0); }  // [0, 1)
  void fill(uint8_t* p, size_t n) {
    size_t i = 0;
    for (; i + 8 <= n; i += 8) {
      const uint64_t r = next();
      std::memcpy(p + i, &r, 8);
    }
    if (i < n) {
      const uint64_t r = next();
      std::memcpy(p + i, &r, n - i);
    }
  }
};

// float -> IEEE half, round to nearest even (normal and subnormal results; no overflow here).
uint16_t to_half(float f) {
  uint32_t x;
  std::memcpy(&x, &f, 4);
  const uint32_t sign = (x >> 16) & 0x8000u;
  x &= 0x7fffffffu;
  if (x >= 0x47800000u) return uint16_t(sign | 0x7c00u);  // too big: inf (not used)
  if (x < 0x38800000u) {                                   // subnormal half
    const float a = std::fabs(f) * 16777216.0f;            // units of 2^-24
    return uint16_t(sign | uint32_t(std::nearbyint(a)));
  }
  const uint32_t mant = x & 0x1fffu, base = (x - 0x38000000u) >> 13;
  uint32_t h = base;
  if (mant > 0x1000u || (mant == 0x1000u && (base & 1u))) ++h;
  return uint16_t(sign | h);
}

uint16_t to_bf16(float f) {
  uint32_t x;
  std::memcpy(&x, &f, 4);
  x += 0x7fffu + ((x >> 16) & 1u);
  return uint16_t(x >> 16);
}

std::string utf8(uint32_t cp) {
  std::string s;
  if (cp < 0x80) {
    s += char(cp);
  } else if (cp < 0x800) {
    s += char(0xc0 | (cp >> 6));
    s += char(0x80 | (cp & 63));
  } else {
    s += char(0xe0 | (cp >> 12));
    s += char(0x80 | ((cp >> 6) & 63));
    s += char(0x80 | (cp & 63));
  }
  return s;
}

[[noreturn]] void die(const std::string& msg) {
  std::fprintf(stderr, "make_llama_gguf: %s\n", msg.c_str());
  std::exit(1);
}

// ---------------------------------------------------------------------------------------------
// ggml types

enum GgmlType : uint32_t { F32 = 0, F16 = 1, Q8_0 = 8, Q4_K = 12, Q6_K = 14, BF16 = 30 };

struct TypeSize {
  int64_t elems, bytes;
};

TypeSize type_size(GgmlType t) {
  switch (t) {
    case F32: return {1, 4};
    case F16: return {1, 2};
    case BF16: return {1, 2};
    case Q8_0: return {32, 34};
    case Q4_K: return {256, 144};
    case Q6_K: return {256, 210};
  }
  die("unknown type");
}

const char* type_name(GgmlType t) {
  switch (t) {
    case F32: return "F32";
    case F16: return "F16";
    case BF16: return "BF16";
    case Q8_0: return "Q8_0";
    case Q4_K: return "Q4_K";
    case Q6_K: return "Q6_K";
  }
  return "?";
}

// ---------------------------------------------------------------------------------------------
// Random tensor contents. Target standard deviation of a weight: 0.02.

constexpr double kStd = 0.02;

// Q8_0: f16 d, 32 int8 q uniform in [-127, 127] (std 73.6): x = d q.
void fill_q8_0(Rng& r, uint8_t* p, int64_t blocks) {
  for (int64_t b = 0; b < blocks; ++b, p += 34) {
    const float d = float(kStd / 73.6 * (0.9 + 0.2 * r.uniform()));
    const uint16_t h = to_half(d);
    std::memcpy(p, &h, 2);
    r.fill(p + 2, 32);
    for (int i = 0; i < 32; ++i)
      if (p[2 + i] == 0x80) p[2 + i] = 0x81;  // -128 -> -127, the range ggml's quantizer uses
  }
}

// Q4_K: f16 d, f16 dmin, 12 bytes of eight 6-bit (scale, min) pairs, 128 bytes of nibbles;
// x = d sc q - dmin mn. With mn = sc and dmin = 7.5 d a sub-block is d sc (q - 7.5), centred,
// std d sc 4.61 for uniform nibbles.
void fill_q4_k(Rng& r, uint8_t* p, int64_t blocks) {
  for (int64_t b = 0; b < blocks; ++b, p += 144) {
    uint8_t sc[8];
    double mean_sc = 0;
    const uint64_t bits = r.next();
    for (int s = 0; s < 8; ++s) {
      sc[s] = uint8_t(32 + ((bits >> (5 * s)) & 31));  // 32..63
      mean_sc += sc[s] / 8.0;
    }
    const float d = float(kStd / (4.61 * mean_sc) * (0.9 + 0.2 * r.uniform()));
    const uint16_t hd = to_half(d), hm = to_half(7.5f * d);
    std::memcpy(p, &hd, 2);
    std::memcpy(p + 2, &hm, 2);
    uint8_t* s = p + 4;  // the mins equal the scales
    for (int j = 0; j < 4; ++j) {
      s[j] = uint8_t((sc[j] & 63) | ((sc[j + 4] >> 4) << 6));
      s[j + 4] = uint8_t((sc[j] & 63) | ((sc[j + 4] >> 4) << 6));
      s[j + 8] = uint8_t((sc[j + 4] & 15) | ((sc[j + 4] & 15) << 4));
    }
    r.fill(p + 16, 128);
  }
}

// Q6_K: 128 bytes low nibbles, 64 bytes 2-bit highs, int8 sc[16], f16 d; x = d sc (q - 32),
// q uniform in 0..63 (std 18.5).
void fill_q6_k(Rng& r, uint8_t* p, int64_t blocks) {
  for (int64_t b = 0; b < blocks; ++b, p += 210) {
    r.fill(p, 192);
    const uint64_t bits = r.next();
    double mean_sc = 0;
    for (int s = 0; s < 16; ++s) {
      p[192 + s] = uint8_t(8 + ((bits >> (4 * s)) & 15));  // 8..23
      mean_sc += p[192 + s] / 16.0;
    }
    const uint16_t h = to_half(float(kStd / (18.5 * mean_sc) * (0.9 + 0.2 * r.uniform())));
    std::memcpy(p + 208, &h, 2);
  }
}

// F16 / BF16: uniform in [-a, a] with a = std sqrt(3), drawn from a 4096-entry table.
void fill_16(Rng& r, uint8_t* p, int64_t n, const std::vector<uint16_t>& table) {
  int64_t i = 0;
  while (i < n) {
    uint64_t bits = r.next();
    for (int k = 0; k < 5 && i < n; ++k, ++i, bits >>= 12) std::memcpy(p + 2 * i, &table[bits & 4095], 2);
  }
}

std::vector<uint16_t> table_16(bool bf16) {
  std::vector<uint16_t> t(4096);
  const double a = kStd * std::sqrt(3.0);
  for (int k = 0; k < 4096; ++k) {
    const float v = float(((k + 0.5) / 4096.0 * 2 - 1) * a);
    t[size_t(k)] = bf16 ? to_bf16(v) : to_half(v);
  }
  return t;
}

// ---------------------------------------------------------------------------------------------
// The tokenizer

// Common English words, most frequent first (Zipf weights by rank).
const char* const kWords =
    "the of and to a in is that for it as was with be by on not he this are or his from at "
    "which but have an they you were her she there one been all we their has would when if "
    "more will so no what can said who up out about into them than its two other some time "
    "only could new these may first then do any like my now over such our man me even most "
    "made after also did many before must through back years where much your way well down "
    "should because each just those people how too little state good very make world still "
    "own see men work long get here between both life being under never day same another "
    "know while last might us great old year off come since against go came right used take "
    "three states himself few house use during without again place around however home small "
    "found thought went say part once general high upon school every don does got united left "
    "number course war until always away something fact though water less public put think "
    "almost hand enough far took head yet government system better set told nothing night end "
    "why called didn eyes find going look asked later knew point next program city business "
    "give group toward young days let room president side social given present several order "
    "national possible rather second face per among form important often things looked early "
    "white case john become large big need four within felt along children saw best church "
    "ever least power development light thing seemed family interest want members mind "
    "country area others done turned although open god service certain kind problem began "
    "different door thus help sense means whole matter perhaps itself york times law human "
    "line above name example action company hands local show whether five history gave today "
    "either act feet across taken past quite anything seen having death week experience body "
    "word half really field am car words already themselves information tell together college "
    "shall money period held keep sure free seems political real behind cannot miss question "
    "air office making brought whose special heard major problems ago became federal study "
    "model attention layer token transformer language learning network training weight head "
    "query key value softmax embedding position sequence input output function data";

// GPT-2's bytes_to_unicode: printable Latin-1 bytes map to themselves, the others to 256 + n.
std::array<uint32_t, 256> byte_chars(std::vector<int>& order) {
  std::array<uint32_t, 256> cp{};
  std::vector<bool> printable(256, false);
  for (int b = 33; b <= 126; ++b) printable[size_t(b)] = true;
  for (int b = 161; b <= 172; ++b) printable[size_t(b)] = true;
  for (int b = 174; b <= 255; ++b) printable[size_t(b)] = true;
  order.clear();
  for (int b = 0; b < 256; ++b)
    if (printable[size_t(b)]) {
      cp[size_t(b)] = uint32_t(b);
      order.push_back(b);
    }
  uint32_t n = 0;
  for (int b = 0; b < 256; ++b)
    if (!printable[size_t(b)]) {
      cp[size_t(b)] = 256 + n++;
      order.push_back(b);
    }
  return cp;
}

struct Vocab {
  std::vector<std::string> tokens;
  std::vector<int32_t> types;
  std::vector<std::string> merges;
};

Vocab make_vocab(int64_t n_vocab) {
  constexpr int64_t kSpecial = 256;
  const int64_t n_regular = n_vocab - kSpecial, n_merges = n_regular - 256;
  if (n_merges < 0) die("vocabulary too small");
  Vocab v;
  std::unordered_map<std::string, int> id;
  std::vector<int> order;
  const std::array<uint32_t, 256> cp = byte_chars(order);
  std::array<std::string, 256> byte_tok;
  for (int b = 0; b < 256; ++b) byte_tok[size_t(b)] = utf8(cp[size_t(b)]);
  for (int b : order) {
    id.emplace(byte_tok[size_t(b)], int(v.tokens.size()));
    v.tokens.push_back(byte_tok[size_t(b)]);
  }
  auto add_merge = [&](const std::string& a, const std::string& b) -> bool {
    if (int64_t(v.merges.size()) >= n_merges) return false;
    const std::string m = a + b;
    if (id.count(m) || !id.count(a) || !id.count(b)) return false;
    id.emplace(m, int(v.tokens.size()));
    v.tokens.push_back(m);
    v.merges.push_back(a + " " + b);
    return true;
  };
  const std::string space = byte_tok[' '], newline = byte_tok['\n'], tab = byte_tok['\t'];

  // 1. BPE learnt from the word list: "Ġword" (weight w), "ĠWord" (w / 4), "word" (w / 8).
  std::vector<std::string> words;
  for (const char* p = kWords; *p;) {
    while (*p == ' ') ++p;
    const char* q = p;
    while (*q && *q != ' ') ++q;
    if (q > p) words.emplace_back(p, q);
    p = q;
  }
  struct Word {
    std::vector<std::string> sym;
    double weight;
  };
  std::vector<Word> corpus;
  std::array<std::array<bool, 26>, 26> bigram{};  // letter pairs seen in the word list
  for (size_t r = 0; r < words.size(); ++r) {
    const double w = 1e6 / double(r + 1);
    std::string cap = words[r];
    cap[0] = char(std::toupper(cap[0]));
    for (const auto& [text, weight, lead] :
         std::vector<std::tuple<std::string, double, bool>>{{words[r], w, true}, {cap, w / 4, true}, {words[r], w / 8, false}}) {
      Word wd{{}, weight};
      if (lead) wd.sym.push_back(space);
      for (unsigned char c : text) wd.sym.push_back(byte_tok[c]);
      corpus.push_back(std::move(wd));
    }
    for (size_t i = 0; i + 1 < words[r].size(); ++i) {
      const int a = words[r][i] - 'a', b = words[r][i + 1] - 'a';
      if (a >= 0 && a < 26 && b >= 0 && b < 26) bigram[size_t(a)][size_t(b)] = true;
    }
  }
  for (int learnt = 0; learnt < 4000 && int64_t(v.merges.size()) < n_merges; ++learnt) {
    std::map<std::pair<std::string, std::string>, double> count;
    for (const Word& w : corpus)
      for (size_t i = 0; i + 1 < w.sym.size(); ++i) count[{w.sym[i], w.sym[i + 1]}] += w.weight;
    if (count.empty()) break;
    auto best = count.begin();
    for (auto it = count.begin(); it != count.end(); ++it)
      if (it->second > best->second) best = it;
    const auto [a, b] = best->first;
    add_merge(a, b);
    for (Word& w : corpus) {
      std::vector<std::string> out;
      for (size_t i = 0; i < w.sym.size(); ++i) {
        if (i + 1 < w.sym.size() && w.sym[i] == a && w.sym[i + 1] == b) {
          out.push_back(a + b);
          ++i;
        } else {
          out.push_back(w.sym[i]);
        }
      }
      w.sym = std::move(out);
    }
  }

  // 2. Letters after a space, digit groups of 1-3 (llama-bpe splits numbers so), whitespace
  // runs and common punctuation.
  for (char c = 'a'; c <= 'z'; ++c) add_merge(space, std::string(1, c));
  for (char c = 'A'; c <= 'Z'; ++c) add_merge(space, std::string(1, c));
  for (char a = '0'; a <= '9'; ++a)
    for (char b = '0'; b <= '9'; ++b) add_merge(std::string(1, a), std::string(1, b));
  for (char a = '0'; a <= '9'; ++a)
    for (char b = '0'; b <= '9'; ++b)
      for (char c = '0'; c <= '9'; ++c) add_merge(std::string{a, b}, std::string(1, c));
  for (const std::string& ws : {space, newline, tab}) {
    std::string run = ws;
    for (int k = 2; k <= 16; ++k) {
      add_merge(run, ws);
      run += ws;
    }
  }
  for (const char* pair : {".Ċ", ",Ġ", ").", "),", ".\"", "\",", "--", "...", "();", "()", "[]",
                           "{}", "==", "!=", "<=", ">=", "->", "::", "//", "/*", "*/", "'s",
                           "'t", "'re", "'ll", "'ve"}) {
    // split the pair's characters (as byte-level tokens) into a left-growing chain
    std::vector<std::string> chars;
    for (const unsigned char* p = reinterpret_cast<const unsigned char*>(pair); *p;) {
      const int len = *p < 0x80 ? 1 : (*p >> 5) == 6 ? 2 : 3;
      chars.emplace_back(reinterpret_cast<const char*>(p), size_t(len));
      p += len;
    }
    std::string left = chars[0];
    for (size_t i = 1; i < chars.size(); ++i) {
      add_merge(left, chars[i]);
      left += chars[i];
    }
  }
  for (char c : std::string("([{\"'-<*&$#@!?:;.,")) add_merge(space, std::string(1, c));

  // 3. Fill: extend word tokens (letters, optionally after Ġ) by letters that follow their last
  // letter somewhere in the word list, breadth first, most frequent letters first; then by any
  // letter if that ran dry.
  const std::string freq = "etaoinshrdlcumwfgypbvkjxqz";
  for (int pass = 0; pass < 2 && int64_t(v.merges.size()) < n_merges; ++pass) {
    std::deque<std::string> queue;
    for (const std::string& t : v.tokens) {
      const std::string body = t.rfind(space, 0) == 0 ? t.substr(space.size()) : t;
      bool letters = !body.empty();
      for (char c : body) letters = letters && std::isalpha(static_cast<unsigned char>(c));
      if (letters) queue.push_back(t);
    }
    while (!queue.empty() && int64_t(v.merges.size()) < n_merges) {
      const std::string t = queue.front();
      queue.pop_front();
      if (t.size() > 12) continue;
      const int last = std::tolower(static_cast<unsigned char>(t.back())) - 'a';
      for (char c : freq) {
        if (pass == 0 && !bigram[size_t(last)][size_t(c - 'a')]) continue;
        if (add_merge(t, std::string(1, c))) queue.push_back(t + c);
      }
    }
  }
  if (int64_t(v.merges.size()) != n_merges) die("could not build enough merges");
  v.types.assign(v.tokens.size(), 1);  // normal

  // 4. Llama 3's special tokens (control).
  const std::vector<std::string> named = {"<|begin_of_text|>", "<|end_of_text|>", "<|reserved_special_token_0|>",
                                          "<|reserved_special_token_1|>", "<|finetune_right_pad_id|>",
                                          "<|reserved_special_token_2|>", "<|start_header_id|>",
                                          "<|end_header_id|>", "<|eom_id|>", "<|eot_id|>", "<|python_tag|>"};
  for (int64_t i = 0, reserved = 3; i < kSpecial; ++i) {
    v.tokens.push_back(i < int64_t(named.size()) ? named[size_t(i)]
                                                 : "<|reserved_special_token_" + std::to_string(reserved++) + "|>");
    v.types.push_back(3);
  }
  return v;
}

// ---------------------------------------------------------------------------------------------
// GGUF writing

struct Header {
  std::vector<uint8_t> b;
  void u32(uint32_t x) { raw(&x, 4); }
  void u64(uint64_t x) { raw(&x, 8); }
  void f32(float x) { raw(&x, 4); }
  void raw(const void* p, size_t n) { b.insert(b.end(), static_cast<const uint8_t*>(p), static_cast<const uint8_t*>(p) + n); }
  void str(const std::string& s) {
    u64(s.size());
    raw(s.data(), s.size());
  }
  uint64_t n_kv = 0;
  void kv_u32(const std::string& k, uint32_t x) { str(k), u32(4), u32(x), ++n_kv; }
  void kv_f32(const std::string& k, float x) { str(k), u32(6), f32(x), ++n_kv; }
  void kv_bool(const std::string& k, bool x) { str(k), u32(7), b.push_back(x ? 1 : 0), ++n_kv; }
  void kv_str(const std::string& k, const std::string& s) { str(k), u32(8), str(s), ++n_kv; }
  void kv_strs(const std::string& k, const std::vector<std::string>& v) {
    str(k), u32(9), u32(8), u64(v.size());
    for (const std::string& s : v) str(s);
    ++n_kv;
  }
  void kv_i32s(const std::string& k, const std::vector<int32_t>& v) {
    str(k), u32(9), u32(5), u64(v.size());
    raw(v.data(), v.size() * 4);
    ++n_kv;
  }
};

struct TensorSpec {
  std::string name;
  std::vector<int64_t> dims;  // ggml order: dims[0] fastest (a [out, in] matrix is {in, out})
  GgmlType type;
  int kind;  // 0 random weight, 1 ones, 2 rope factors
  uint64_t offset = 0;
  int64_t numel() const {
    int64_t n = 1;
    for (int64_t d : dims) n *= d;
    return n;
  }
  uint64_t bytes() const {
    const TypeSize t = type_size(type);
    if (dims[0] % t.elems) die(name + ": row of " + std::to_string(dims[0]) + " not a multiple of the block");
    return uint64_t(numel() / t.elems * t.bytes);
  }
};

struct Shape {
  std::string name, size_label;
  int64_t layers, d, heads, kv_heads, ffn, vocab;
  bool tied;
  float rope_factor;
};

constexpr uint64_t kAlign = 32;
uint64_t align_up(uint64_t x) { return (x + kAlign - 1) / kAlign * kAlign; }

// Llama 3's rope_freqs.weight as llama.cpp's converter writes it: per frequency, the divisor the
// "llama3" rule applies (1 for short wavelengths, factor for long, smooth between).
std::vector<float> rope_factors(int64_t d_head, double theta, double factor) {
  const double low = 1, high = 4, original = 8192;
  std::vector<float> f;
  for (int64_t i = 0; i < d_head; i += 2) {
    const double freq = 1.0 / std::pow(theta, double(i) / double(d_head));
    const double wavelen = 2 * M_PI / freq;
    if (wavelen < original / high) f.push_back(1.0f);
    else if (wavelen > original / low) f.push_back(float(factor));
    else {
      const double smooth = (original / wavelen - low) / (high - low);
      f.push_back(float(1.0 / ((1 - smooth) / factor + smooth)));
    }
  }
  return f;
}

void write_all(int fd, const uint8_t* p, size_t n, const std::string& path) {
  while (n) {
    const ssize_t w = ::write(fd, p, n);
    if (w < 0) die("write " + path + ": " + std::strerror(errno));
    p += w;
    n -= size_t(w);
  }
}

}  // namespace

int main(int argc, char** argv) {
  std::string shape_name = "1b", type = "q8_0", out, pre = "llama-bpe";
  int64_t layers = -1;
  uint64_t seed = 1;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    auto next = [&]() -> std::string {
      if (i + 1 >= argc) die(a + " needs a value");
      return argv[++i];
    };
    if (a == "--shape") shape_name = next();
    else if (a == "--type") type = next();
    else if (a == "--layers") layers = std::atoll(next().c_str());
    else if (a == "--seed") seed = std::strtoull(next().c_str(), nullptr, 10);
    else if (a == "-o" || a == "--out") out = next();
    else if (a == "--pre") pre = next();  // tokenizer.ggml.pre ("none": no key), for tokenizer checks
    else {
      std::fprintf(stderr,
                   "usage: make_llama_gguf --shape 1b|8b --type q8_0|q4_k_m|f16|bf16 [--layers N] [--seed S]\n"
                   "                       [--pre NAME|none] -o FILE\n");
      return 2;
    }
  }
  if (out.empty()) die("no output file (-o FILE)");
  Shape s;
  if (shape_name == "1b") s = {"Llama 3.2 1B (random weights)", "1B", 16, 2048, 32, 8, 8192, 128256, true, 32};
  else if (shape_name == "8b") s = {"Llama 3.1 8B (random weights)", "8B", 32, 4096, 32, 8, 14336, 128256, false, 8};
  else die("--shape must be 1b or 8b");
  if (layers > 0) s.layers = layers;
  uint32_t file_type;  // llama_ftype
  if (type == "q8_0") file_type = 7;
  else if (type == "q4_k_m") file_type = 15;
  else if (type == "f16") file_type = 1;
  else if (type == "bf16") file_type = 32;
  else die("--type must be q8_0, q4_k_m, f16 or bf16");
  const int64_t d_head = s.d / s.heads, d_kv = s.kv_heads * d_head;

  // The tensors and their types.
  auto use_more_bits = [&](int64_t i, int64_t n) { return i < n / 8 || i >= 7 * n / 8 || (i - n / 8) % 3 == 2; };
  auto matrix_type = [&](const std::string& role, int64_t layer) -> GgmlType {
    if (type == "q8_0") return Q8_0;
    if (type == "f16") return F16;
    if (type == "bf16") return BF16;
    if (role == "output" || (role == "token_embd" && s.tied)) return Q6_K;
    if ((role == "attn_v" || role == "ffn_down") && use_more_bits(layer, s.layers)) return Q6_K;
    return Q4_K;
  };
  std::vector<TensorSpec> t;
  t.push_back({"rope_freqs.weight", {d_head / 2}, F32, 2});
  t.push_back({"token_embd.weight", {s.d, s.vocab}, matrix_type("token_embd", -1), 0});
  for (int64_t i = 0; i < s.layers; ++i) {
    const std::string b = "blk." + std::to_string(i) + ".";
    t.push_back({b + "attn_norm.weight", {s.d}, F32, 1});
    t.push_back({b + "attn_q.weight", {s.d, s.d}, matrix_type("attn_q", i), 0});
    t.push_back({b + "attn_k.weight", {s.d, d_kv}, matrix_type("attn_k", i), 0});
    t.push_back({b + "attn_v.weight", {s.d, d_kv}, matrix_type("attn_v", i), 0});
    t.push_back({b + "attn_output.weight", {s.d, s.d}, matrix_type("attn_output", i), 0});
    t.push_back({b + "ffn_norm.weight", {s.d}, F32, 1});
    t.push_back({b + "ffn_gate.weight", {s.d, s.ffn}, matrix_type("ffn_gate", i), 0});
    t.push_back({b + "ffn_up.weight", {s.d, s.ffn}, matrix_type("ffn_up", i), 0});
    t.push_back({b + "ffn_down.weight", {s.ffn, s.d}, matrix_type("ffn_down", i), 0});
  }
  t.push_back({"output_norm.weight", {s.d}, F32, 1});
  if (!s.tied) t.push_back({"output.weight", {s.d, s.vocab}, matrix_type("output", -1), 0});

  const auto t0 = std::chrono::steady_clock::now();
  const Vocab vocab = make_vocab(s.vocab);
  if (int64_t(vocab.tokens.size()) != s.vocab) die("vocabulary size mismatch");

  Header h;
  h.kv_str("general.architecture", "llama");
  h.kv_str("general.type", "model");
  h.kv_str("general.name", s.name);
  h.kv_str("general.size_label", s.size_label);
  h.kv_u32("llama.block_count", uint32_t(s.layers));
  h.kv_u32("llama.context_length", 131072);
  h.kv_u32("llama.embedding_length", uint32_t(s.d));
  h.kv_u32("llama.feed_forward_length", uint32_t(s.ffn));
  h.kv_u32("llama.attention.head_count", uint32_t(s.heads));
  h.kv_u32("llama.attention.head_count_kv", uint32_t(s.kv_heads));
  h.kv_f32("llama.rope.freq_base", 500000.0f);
  h.kv_f32("llama.attention.layer_norm_rms_epsilon", 1e-5f);
  h.kv_u32("llama.attention.key_length", uint32_t(d_head));
  h.kv_u32("llama.attention.value_length", uint32_t(d_head));
  h.kv_u32("llama.vocab_size", uint32_t(s.vocab));
  h.kv_u32("llama.rope.dimension_count", uint32_t(d_head));
  h.kv_u32("general.file_type", file_type);
  h.kv_str("tokenizer.ggml.model", "gpt2");
  if (pre != "none") h.kv_str("tokenizer.ggml.pre", pre);
  h.kv_strs("tokenizer.ggml.tokens", vocab.tokens);
  h.kv_i32s("tokenizer.ggml.token_type", vocab.types);
  h.kv_strs("tokenizer.ggml.merges", vocab.merges);
  h.kv_u32("tokenizer.ggml.bos_token_id", 128000);
  h.kv_u32("tokenizer.ggml.eos_token_id", 128001);
  h.kv_bool("tokenizer.ggml.add_bos_token", true);
  if (file_type == 7 || file_type == 15) h.kv_u32("general.quantization_version", 2);

  Header info;
  uint64_t offset = 0;
  for (TensorSpec& x : t) {
    x.offset = offset;
    info.str(x.name);
    info.u32(uint32_t(x.dims.size()));
    for (int64_t d : x.dims) info.u64(uint64_t(d));
    info.u32(x.type);
    info.u64(x.offset);
    offset = align_up(offset + x.bytes());
  }
  const uint64_t data_bytes = offset;
  Header top;
  top.raw("GGUF", 4);
  top.u32(3);
  top.u64(t.size());
  top.u64(h.n_kv);
  std::vector<uint8_t> head = top.b;
  head.insert(head.end(), h.b.begin(), h.b.end());
  head.insert(head.end(), info.b.begin(), info.b.end());
  head.resize(align_up(head.size()), 0);
  const uint64_t expected = head.size() + data_bytes;

  const std::string tmp = out + ".partial";
  const int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
  if (fd < 0) die("cannot create " + tmp + ": " + std::strerror(errno));
  write_all(fd, head.data(), head.size(), tmp);

  const std::vector<uint16_t> t_f16 = table_16(false), t_bf16 = table_16(true);
  constexpr size_t kBuf = size_t(64) << 20;
  std::vector<uint8_t> buf;
  buf.reserve(kBuf + (size_t(1) << 16));
  auto flush = [&](bool all) {
    if (buf.size() >= kBuf || (all && !buf.empty())) {
      write_all(fd, buf.data(), buf.size(), tmp);
      buf.clear();
    }
  };
  std::map<std::string, std::pair<int, uint64_t>> by_type;  // type -> (tensors, bytes)
  uint64_t written = head.size();
  for (size_t k = 0; k < t.size(); ++k) {
    const TensorSpec& x = t[k];
    uint64_t tensor_seed = seed * 0x100000001b3ull + k;
    Rng r(splitmix64(tensor_seed));
    auto& bt = by_type[type_name(x.type)];
    ++bt.first;
    bt.second += x.bytes();
    if (x.kind == 1 || x.kind == 2) {
      std::vector<float> v = x.kind == 1 ? std::vector<float>(size_t(x.numel()), 1.0f)
                                         : rope_factors(d_head, 500000.0, s.rope_factor);
      const uint8_t* p = reinterpret_cast<const uint8_t*>(v.data());
      buf.insert(buf.end(), p, p + v.size() * 4);
    } else {
      // In chunks of whole rows' blocks, about 16 MB at a time.
      const TypeSize ts = type_size(x.type);
      const int64_t blocks = x.numel() / ts.elems;
      const int64_t chunk = std::max<int64_t>(1, (int64_t(16) << 20) / ts.bytes);
      for (int64_t b0 = 0; b0 < blocks; b0 += chunk) {
        const int64_t nb = std::min(chunk, blocks - b0);
        const size_t at = buf.size();
        buf.resize(at + size_t(nb * ts.bytes));
        uint8_t* p = buf.data() + at;
        switch (x.type) {
          case Q8_0: fill_q8_0(r, p, nb); break;
          case Q4_K: fill_q4_k(r, p, nb); break;
          case Q6_K: fill_q6_k(r, p, nb); break;
          case F16: fill_16(r, p, nb, t_f16); break;
          case BF16: fill_16(r, p, nb, t_bf16); break;
          default: die("unexpected type");
        }
        flush(false);
      }
    }
    buf.resize(buf.size() + (align_up(x.bytes()) - x.bytes()), 0);
    written += align_up(x.bytes());
    flush(false);
  }
  flush(true);
  ::close(fd);
  struct stat st {};
  if (::stat(tmp.c_str(), &st) != 0) die("cannot stat " + tmp);
  if (uint64_t(st.st_size) != expected || written != expected)
    die("size check failed: file " + std::to_string(st.st_size) + " bytes, expected " + std::to_string(expected));
  if (std::rename(tmp.c_str(), out.c_str()) != 0) die("cannot rename to " + out);
  const double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();

  std::printf("%s: %s, %s, %lld layers, %zu tensors, %zu KV pairs, vocab %zu (%zu merges)\n", out.c_str(),
              s.name.c_str(), type.c_str(), (long long)s.layers, t.size(), size_t(h.n_kv), vocab.tokens.size(),
              vocab.merges.size());
  for (const auto& [name, nb] : by_type)
    std::printf("  %-5s %4d tensors %10.1f MB\n", name.c_str(), nb.first, double(nb.second) / 1e6);
  std::printf("  header %zu bytes + data %llu bytes (aligned to %llu) = %llu bytes, checked; %.1f s\n", head.size(),
              (unsigned long long)data_bytes, (unsigned long long)kAlign, (unsigned long long)expected, secs);
  return 0;
}
