# Turns a SPIR-V binary into a C++ header holding it as a uint32_t array, so no shader file
# is read at run time.  Usage:
#   cmake -DSPV=in.spv -DOUT=out.h -DNAME=symbol -P embed_spirv.cmake
file(READ "${SPV}" hex HEX)
string(LENGTH "${hex}" nchars)
math(EXPR rem "${nchars} % 8")
if(nchars EQUAL 0 OR NOT rem EQUAL 0)
  message(FATAL_ERROR "${SPV}: not a SPIR-V module (size is not a multiple of 4 bytes)")
endif()
# SPIR-V words are little-endian on disk: byte order 0 1 2 3 -> 0x33221100.
string(REGEX REPLACE "([0-9a-f][0-9a-f])([0-9a-f][0-9a-f])([0-9a-f][0-9a-f])([0-9a-f][0-9a-f])"
       "0x\\4\\3\\2\\1u," words "${hex}")
# Eight words per line keeps the header diff-able and the compiler happy.
set(w "0x[0-9a-f]+u,")  # CMake regexes have no {n} repetition
string(REGEX REPLACE "(${w}${w}${w}${w}${w}${w}${w}${w})" "\\1\n  " words "${words}")
if(NOT words MATCHES "^0x07230203u,")
  message(FATAL_ERROR "${SPV}: missing the SPIR-V magic number 0x07230203")
endif()
file(WRITE "${OUT}.tmp"
  "// Generated from ${SPV} by gpu/cmake/embed_spirv.cmake. Do not edit.\n"
  "#pragma once\n#include <cstdint>\n\n"
  "inline constexpr uint32_t ${NAME}[] = {\n  ${words}\n};\n")
file(COPY_FILE "${OUT}.tmp" "${OUT}" ONLY_IF_DIFFERENT)
file(REMOVE "${OUT}.tmp")
