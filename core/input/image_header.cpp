// Image headers checked before decoding (image_header.h). Layouts: PNG (ISO/IEC 15948, IHDR
// first, IEND last), JPEG (ITU T.81 markers; SOFn holds the size; entropy-coded data stuffs
// 0xFF as FF 00), GIF (logical screen descriptor), BMP (BITMAPINFOHEADER), PPM (netpbm P6).
#include "core/input/image_header.h"

#include <algorithm>
#include <cctype>

#include "core/tensor/error.h"

namespace atlas {

namespace {

uint32_t image_be32(std::string_view s, size_t at) {
  return uint32_t(uint8_t(s[at])) << 24 | uint32_t(uint8_t(s[at + 1])) << 16 |
         uint32_t(uint8_t(s[at + 2])) << 8 | uint32_t(uint8_t(s[at + 3]));
}
uint32_t image_be16(std::string_view s, size_t at) { return uint32_t(uint8_t(s[at])) << 8 | uint8_t(s[at + 1]); }
uint32_t image_le16(std::string_view s, size_t at) { return uint32_t(uint8_t(s[at + 1])) << 8 | uint8_t(s[at]); }
uint32_t image_le32(std::string_view s, size_t at) { return image_le16(s, at + 2) << 16 | image_le16(s, at); }

[[noreturn]] void refuse_image(const std::string& origin, const std::string& what) {
  throw AtlasError(origin + ": " + what);
}

std::string image_truncated(const std::string& format, std::string_view s, const std::string& what) {
  return "the " + format + " image is truncated: " + what + " (the file has " +
         std::to_string(s.size()) + " bytes)";
}

// PNG: the signature, IHDR's width and height, then every chunk inside the file up to IEND.
ImageHeader png_header(std::string_view s, const std::string& origin) {
  if (s.size() < 33 || s.substr(12, 4) != "IHDR")
    refuse_image(origin, image_truncated("PNG", s, "its IHDR header is missing or cut"));
  ImageHeader h{"PNG", image_be32(s, 16), image_be32(s, 20)};
  check_image_size(h.width, h.height, h.format, origin);
  for (size_t at = 8;;) {
    if (s.size() - at < 12) refuse_image(origin, image_truncated("PNG", s, "it ends before its IEND chunk"));
    const uint64_t length = image_be32(s, at);
    if (length > s.size() - at - 12)
      refuse_image(origin, image_truncated("PNG", s, "chunk \"" + std::string(s.substr(at + 4, 4)) + "\" at byte " +
                                             std::to_string(at) + " claims " + std::to_string(length) +
                                             " bytes"));
    if (s.substr(at + 4, 4) == "IEND") return h;
    at += 12 + length;
  }
}

// JPEG: markers from SOI to EOI, skipping each segment by its length and each scan's entropy-
// coded data to the next marker; the first SOFn (C0..CF but C4, C8, CC) gives the size.
ImageHeader jpeg_header(std::string_view s, const std::string& origin) {
  ImageHeader h{"JPEG", -1, -1};
  size_t at = 2;
  while (true) {
    while (at < s.size() && uint8_t(s[at]) == 0xFF) ++at;  // a marker, after any fill bytes
    if (at >= s.size()) break;
    const uint8_t m = uint8_t(s[at++]);
    if (m == 0xD9) {  // EOI
      if (h.width < 0) refuse_image(origin, "the JPEG image has no frame header (SOF): not an image");
      return h;
    }
    if ((m >= 0xD0 && m <= 0xD7) || m == 0x01) continue;  // RSTn, TEM: no length
    if (s.size() - at < 2) break;
    const size_t length = image_be16(s, at);
    if (length < 2 || length > s.size() - at) break;
    const bool sof = m >= 0xC0 && m <= 0xCF && m != 0xC4 && m != 0xC8 && m != 0xCC;
    if (sof && h.width < 0) {
      if (length < 7) break;
      h.height = image_be16(s, at + 3);
      h.width = image_be16(s, at + 5);
      // Height 0 (defined by a later DNL marker) is refused with the empty images.
      check_image_size(h.width, h.height, h.format, origin);
    }
    at += length;
    if (m == 0xDA) {  // SOS: entropy-coded data up to the next marker that is not FF00 or RSTn
      while (at + 1 < s.size()) {
        if (uint8_t(s[at]) == 0xFF) {
          const uint8_t next = uint8_t(s[at + 1]);
          if (next != 0x00 && !(next >= 0xD0 && next <= 0xD7) && next != 0xFF) break;
          at += next == 0xFF ? 1 : 2;
        } else {
          ++at;
        }
      }
      if (at + 1 >= s.size()) break;
    }
  }
  refuse_image(origin, image_truncated("JPEG", s, "it ends before its end-of-image marker (FF D9)"));
}

// Binary PPM: "P6", width, height and maxval as decimal text with comments, one whitespace,
// then width x height x 3 bytes (x 2 when maxval > 255).
ImageHeader ppm_header(std::string_view s, const std::string& origin) {
  int64_t fields[3] = {0, 0, 0};
  size_t at = 2;
  for (int64_t& f : fields) {
    while (at < s.size() && (std::isspace(uint8_t(s[at])) || s[at] == '#')) {
      if (s[at] == '#')
        while (at < s.size() && s[at] != '\n') ++at;
      else
        ++at;
    }
    if (at >= s.size() || !std::isdigit(uint8_t(s[at])))
      refuse_image(origin, image_truncated("PPM", s, "its header (width, height, maxval) is incomplete"));
    for (; at < s.size() && std::isdigit(uint8_t(s[at])); ++at) {
      f = f * 10 + (s[at] - '0');
      if (f > (int64_t(1) << 32))
        refuse_image(origin, "the PPM header holds a number over 4294967296 (" +
                           std::string(s.substr(0, 64)) + "...)");
    }
  }
  ImageHeader h{"PPM", fields[0], fields[1]};
  check_image_size(h.width, h.height, h.format, origin);
  const int64_t need = h.width * h.height * 3 * (fields[2] > 255 ? 2 : 1);
  const int64_t left = int64_t(s.size()) - int64_t(at) - 1;  // one whitespace ends the header
  if (left < need)
    refuse_image(origin, image_truncated("PPM", s, "its " + std::to_string(h.width) + " x " +
                                           std::to_string(h.height) + " pixels need " +
                                           std::to_string(need) + " bytes, " +
                                           std::to_string(std::max<int64_t>(left, 0)) + " follow the header"));
  return h;
}

}  // namespace

void check_image_size(int64_t width, int64_t height, const std::string& format,
                      const std::string& origin) {
  if (width < 1 || height < 1)
    refuse_image(origin, "the " + format + " header gives a size of " + std::to_string(width) + " x " +
                       std::to_string(height) + " pixels: an empty image");
  if (width > kMaxImagePixels || height > kMaxImagePixels || width * height > kMaxImagePixels)
    refuse_image(origin, "the " + format + " header claims " + std::to_string(width) + " x " +
                       std::to_string(height) + " pixels, over the limit of " +
                       std::to_string(kMaxImagePixels) + " (8192 x 8192); scale it down first");
}

ImageHeader check_image_header(std::string_view s, const std::string& origin) {
  if (s.size() >= 8 && s.substr(0, 8) == "\x89PNG\r\n\x1a\n") return png_header(s, origin);
  if (s.size() >= 3 && uint8_t(s[0]) == 0xFF && uint8_t(s[1]) == 0xD8 && uint8_t(s[2]) == 0xFF)
    return jpeg_header(s, origin);
  if (s.size() >= 2 && s.substr(0, 2) == "P6") return ppm_header(s, origin);
  if (s.size() >= 6 && (s.substr(0, 6) == "GIF87a" || s.substr(0, 6) == "GIF89a")) {
    if (s.size() < 10) refuse_image(origin, image_truncated("GIF", s, "its screen descriptor is cut"));
    ImageHeader h{"GIF", image_le16(s, 6), image_le16(s, 8)};
    check_image_size(h.width, h.height, h.format, origin);
    return h;
  }
  if (s.size() >= 2 && s.substr(0, 2) == "BM") {
    if (s.size() < 26) refuse_image(origin, image_truncated("BMP", s, "its header is cut"));
    const uint32_t info = image_le32(s, 14);
    // BITMAPCOREHEADER (12 bytes) holds 16-bit sizes, the others 32-bit signed ones; a negative
    // height is a top-down image.
    const int64_t w = info == 12 ? image_le16(s, 18) : int32_t(image_le32(s, 18));
    const int64_t hh = info == 12 ? image_le16(s, 20) : int32_t(image_le32(s, 22));
    ImageHeader h{"BMP", w, hh < 0 ? -hh : hh};
    check_image_size(h.width, h.height, h.format, origin);
    return h;
  }
  return {};
}

}  // namespace atlas
