#pragma once
// The one exception type of the engine. Its message is shown to the user as-is, so it must
// name the file, key or tensor at fault and say what was expected.
#include <stdexcept>
#include <string>

namespace atlas {

class AtlasError : public std::runtime_error {
 public:
  explicit AtlasError(const std::string& message) : std::runtime_error(message) {}
};

// Thrown when RunOptions::cancel (or LoadOptions' monitor) is set while a forward pass (a load)
// is running.
class Cancelled : public AtlasError {
 public:
  Cancelled() : AtlasError("run cancelled") {}
  explicit Cancelled(const std::string& message) : AtlasError(message) {}
};

}  // namespace atlas
