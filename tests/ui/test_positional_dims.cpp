// The positional view's "Dimensions" field takes indices from the user: one out of P's range,
// beyond 64 bits or not a number is named under the field with the valid range, never dropped
// silently; the valid ones are plotted.
#include <catch2/catch.hpp>

#include <QLineEdit>

#include "tests/ui/ui_test_support.h"
#include "ui/views/positional_view.h"

using namespace atlas;
using namespace atlas::ui;

TEST_CASE("the positional view names typed dimensions outside P's range", "[ui][selection]") {
  uitest::ensureApp();
  PositionalView view;
  view.setTrace(std::make_shared<const Trace>(uitest::handTrace()));  // P [3 positions, 4 dimensions]
  auto* dims = view.findChild<QLineEdit*>("dimensionsEdit");
  REQUIRE(dims);
  dims->setText("0, 3");
  emit dims->editingFinished();
  CHECK(view.dimensionsProblem().isEmpty());
  dims->setText("0 4 -1 x 9223372036854775808");
  emit dims->editingFinished();
  const QString problem = view.dimensionsProblem();
  INFO(problem.toStdString());
  CHECK(problem.contains("dimension 4 is out of range: P has 4 dimensions (0 to 3)"));
  CHECK(problem.contains("dimension -1 is out of range: P has 4 dimensions (0 to 3)"));
  CHECK(problem.contains("\"x\" is not a dimension number"));
  CHECK(problem.contains("dimension 9223372036854775808 is out of range"));
  CHECK_FALSE(problem.contains("dimension 0 "));
}
