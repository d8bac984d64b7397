# The Python module attention_atlas (app/python, docs/python.md): built when pybind11 (Debian's
# pybind11-dev) and a Python 3 interpreter that imports numpy (python3-numpy) are found; sets
# ATLAS_PYTHON_MODULE. Not in the sanitizer build: an ASan-instrumented extension needs libasan
# preloaded into the interpreter (LD_PRELOAD), which the test command does not do.
set(ATLAS_PYTHON_MODULE OFF)
if(NOT ATLAS_PYTHON)
  return()
endif()
if(ATLAS_SANITIZE)
  message(STATUS "attention_atlas Python module: off in the sanitizer build (docs/python.md)")
  return()
endif()
# The interpreter the module is built for and tested with: the first python3 that imports numpy
# (PATH's may be a pyenv or venv python without it; Debian's /usr/bin/python3 has python3-numpy).
if(NOT Python_EXECUTABLE)
  find_program(ATLAS_PATH_PYTHON3 python3)
  foreach(candidate ${ATLAS_PATH_PYTHON3} /usr/bin/python3)
    if(EXISTS "${candidate}")
      execute_process(COMMAND "${candidate}" -c "import numpy" RESULT_VARIABLE numpy_missing
                      OUTPUT_QUIET ERROR_QUIET)
      if(numpy_missing EQUAL 0)
        set(Python_EXECUTABLE "${candidate}" CACHE FILEPATH "Python interpreter of the attention_atlas module")
        break()
      endif()
    endif()
  endforeach()
endif()
if(NOT Python_EXECUTABLE)
  message(STATUS "attention_atlas Python module: off (no python3 that imports numpy; install python3-numpy)")
  return()
endif()
set(PYBIND11_FINDPYTHON ON)
find_package(Python 3.8 COMPONENTS Interpreter Development.Module QUIET)
find_package(pybind11 2.6 CONFIG QUIET)
if(NOT Python_FOUND OR NOT pybind11_FOUND)
  message(STATUS "attention_atlas Python module: off (needs pybind11-dev and python3-dev)")
  return()
endif()
message(STATUS "attention_atlas Python module: on, for ${Python_EXECUTABLE} (pybind11 ${pybind11_VERSION})")
set(ATLAS_PYTHON_MODULE ON)

# A Python extension is a shared object: the engine linked into it must be position-independent
# (-fPIC; Debian's default -fpie objects and their thread_local variables cannot go into one).
# -fno-semantic-interposition keeps the inlining of -fpie: the engine's functions are never
# interposed. Targets that reuse the parsers' precompiled header need the same -fpic setting.
function(atlas_position_independent)
  foreach(t ${ARGN})
    if(TARGET ${t})
      set_target_properties(${t} PROPERTIES POSITION_INDEPENDENT_CODE ON)
      target_compile_options(${t} PRIVATE -fno-semantic-interposition)
    endif()
  endforeach()
endfunction()
