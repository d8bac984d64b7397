#pragma once
// Whether the test binary is built with AddressSanitizer: its allocator keeps freed memory in
// quarantine and adds redzones, so a process's resident size and address-space limits mean
// something else there.
namespace atlas::test {

inline bool under_address_sanitizer() {
#if defined(__has_feature)
#if __has_feature(address_sanitizer)
  return true;
#endif
#endif
#if defined(__SANITIZE_ADDRESS__)
  return true;
#else
  return false;
#endif
}

}  // namespace atlas::test
