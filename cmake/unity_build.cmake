# atlas_unity_build(TARGET): with ATLAS_UNITY, the target's sources compiled in batches of eight
# (CMakeLists.txt says why). File-local names (anonymous namespaces) must then be unique within
# the target: a clash is a compile error, or a call that silently finds another file's helper
# (scripts/check_file_local_names.py checks every pair; the parsers of user files are a target
# of their own, atlas_core_parsers, core/CMakeLists.txt).
function(atlas_unity_build target)
  if(NOT ATLAS_UNITY)
    return()
  endif()
  set_target_properties(${target} PROPERTIES UNITY_BUILD ON UNITY_BUILD_BATCH_SIZE 8)
endfunction()
