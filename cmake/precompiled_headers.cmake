# Precompiled headers: every translation unit of the engine includes Eigen through
# core/tensor/tensor.h, and every test includes Catch2's 17k-line header; parsing them again in
# each of ~300 files was about a third of the build. One PCH per target (their flags differ).
# ATLAS_PCH=OFF builds without them, which also checks that each file includes what it uses.
option(ATLAS_PCH "Precompile the standard, Eigen, JSON, Catch2 and Qt headers" ON)

set(ATLAS_PCH_ENGINE_HEADERS
  <algorithm> <cmath> <cstdint> <filesystem> <fstream> <functional> <map> <memory>
  <optional> <sstream> <string> <string_view> <unordered_map> <vector>
  <Eigen/Dense> <nlohmann/json.hpp>)

# atlas_precompile(TARGET [ENGINE] [TESTS] [QT])
#   ENGINE: the standard library, Eigen and nlohmann::json (and the model header)
#   TESTS:  Catch2
#   QT:     the Qt Widgets headers most of ui/ uses
function(atlas_precompile target)
  if(NOT ATLAS_PCH)
    return()
  endif()
  cmake_parse_arguments(PCH "ENGINE;TESTS;QT" "" "" ${ARGN})
  set(headers)
  if(PCH_ENGINE)
    list(APPEND headers ${ATLAS_PCH_ENGINE_HEADERS} "${PROJECT_SOURCE_DIR}/core/model/model.h")
  endif()
  if(PCH_TESTS)
    list(APPEND headers <catch2/catch.hpp>)
  endif()
  if(PCH_QT)
    list(APPEND headers <QComboBox> <QFileDialog> <QFormLayout> <QHBoxLayout> <QImage> <QLabel>
         <QMessageBox> <QPainter> <QPushButton> <QString> <QVBoxLayout> <QWidget>)
  endif()
  target_precompile_headers(${target} PRIVATE ${headers})
endfunction()

# atlas_precompile_shared(TARGET FROM [ENGINE] [TESTS] [QT]): TARGET uses FROM's precompiled
# header instead of building its own (~15 s each). g++ only, which accepts a PCH built with
# other -D macros as long as the precompiled headers never read them (ATLAS_CLI,
# ATLAS_SOURCE_DIR); the sanitizer build (clang) builds its own from the listed headers, as
# atlas_precompile does (sharing was not tried there).
function(atlas_precompile_shared target from)
  if(ATLAS_PCH AND CMAKE_CXX_COMPILER_ID STREQUAL "GNU")
    target_precompile_headers(${target} REUSE_FROM ${from})
  else()
    atlas_precompile(${target} ${ARGN})
  endif()
endfunction()
