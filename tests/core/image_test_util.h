#pragma once
// Small image files built byte by byte for the image-header tests (no encoder needed): a
// baseline grey JPEG whose every 8x8 block is mid-grey, a PNG of given size whose IDAT is a
// placeholder (the header checks never inflate it), and binary PPM headers.
#include <cstdint>
#include <string>

namespace image_test {

inline void put16(std::string& s, uint32_t v) {
  s += char(v >> 8);
  s += char(v & 0xFF);
}
inline void put32(std::string& s, uint32_t v) {
  put16(s, v >> 16);
  put16(s, v & 0xFFFF);
}

// A baseline JPEG, `width` x `height` grey pixels (multiples of 8): one DC and one AC Huffman
// code of length 1 ("0": DC difference 0, end of block), so each block costs 2 bits.
inline std::string grey_jpeg(uint32_t width, uint32_t height) {
  std::string s = "\xFF\xD8";
  s += "\xFF\xDB";  // DQT: table 0, all ones
  put16(s, 67);
  s += '\0';
  s += std::string(64, '\x01');
  s += "\xFF\xC0";  // SOF0: 8-bit, one component, 1x1 sampling, table 0
  put16(s, 11);
  s += '\x08';
  put16(s, height);
  put16(s, width);
  s += std::string("\x01\x01\x11\x00", 4);
  for (const char cls : {'\x00', '\x10'}) {  // DHT: DC table 0, then AC table 0
    s += "\xFF\xC4";
    put16(s, 20);
    s += cls;
    s += '\x01';  // one code of length 1 ...
    s += std::string(15, '\0');
    s += '\0';  // ... for category 0 (DC) / end of block (AC)
  }
  s += "\xFF\xDA";  // SOS: one component, tables 0/0, full spectrum
  put16(s, 8);
  s += std::string("\x01\x01\x00\x00\x3F\x00", 6);
  const uint64_t bits = uint64_t(width / 8) * (height / 8) * 2;
  s += std::string(size_t(bits / 8), '\0');
  if (bits % 8) s += char(0xFF >> (bits % 8));  // padded with ones
  s += "\xFF\xD9";
  return s;
}

inline uint32_t crc32(const std::string& bytes) {
  uint32_t c = 0xFFFFFFFFu;
  for (unsigned char b : bytes) {
    c ^= b;
    for (int k = 0; k < 8; ++k) c = (c >> 1) ^ (0xEDB88320u & (0u - (c & 1u)));
  }
  return ~c;
}

inline void png_chunk(std::string& s, const std::string& type, const std::string& data) {
  put32(s, uint32_t(data.size()));
  s += type + data;
  put32(s, crc32(type + data));
}

// A PNG whose IHDR says `width` x `height`, 8-bit RGB, with a placeholder IDAT and IEND.
inline std::string png_claiming(uint32_t width, uint32_t height) {
  std::string s = "\x89PNG\r\n\x1a\n";
  std::string ihdr;
  put32(ihdr, width);
  put32(ihdr, height);
  ihdr += std::string("\x08\x02\x00\x00\x00", 5);
  png_chunk(s, "IHDR", ihdr);
  png_chunk(s, "IDAT", std::string("\x78\x9c\x03\x00\x00\x00\x00\x01", 8));
  png_chunk(s, "IEND", "");
  return s;
}

}  // namespace image_test
