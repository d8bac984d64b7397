#pragma once
// Qt needs an application object for fonts and painting: the figure-writing verbs (export,
// ablate, compare) make one on the offscreen platform when there is no display, so they work
// over ssh and in CI.
#if defined(ATLAS_HAVE_UI)
#include <QGuiApplication>
#include <memory>

namespace atlas::cli {

// Null when an application object already exists.
std::unique_ptr<QGuiApplication> make_headless_app();

}  // namespace atlas::cli
#endif
