# atlas_unity_build(TARGET): with ATLAS_UNITY, the target's sources compiled in batches of eight
# (CMakeLists.txt says why). The parsers of user files stay single files: the sanitizer build
# compiles them with libFuzzer's coverage flags, which CMake never batches, and the release build
# keeps the same files apart so both builds group alike. File-local names (anonymous namespaces)
# must then be unique within the target: a clash is a compile error, not a silent change.
function(atlas_unity_build target)
  if(NOT ATLAS_UNITY)
    return()
  endif()
  set_target_properties(${target} PROPERTIES UNITY_BUILD ON UNITY_BUILD_BATCH_SIZE 8)
  include(${PROJECT_SOURCE_DIR}/cmake/fuzz_parser_sources.cmake)
  set_source_files_properties(${ATLAS_FUZZ_PARSER_SOURCES} TARGET_DIRECTORY ${target}
                              PROPERTIES SKIP_UNITY_BUILD_INCLUSION ON)
endfunction()
