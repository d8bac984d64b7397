#include "tests/backend_ops/op_case.h"

#include <algorithm>
#include <map>

namespace atlas::op_test {

namespace {

std::vector<OpCase>& registered() {
  static std::vector<OpCase> all;
  return all;
}

}  // namespace

Register::Register(OpCase c) { registered().push_back(std::move(c)); }

std::vector<const OpCase*> op_cases() {
  std::vector<const OpCase*> out;
  for (const OpCase& c : registered()) out.push_back(&c);
  std::stable_sort(out.begin(), out.end(), [](const OpCase* a, const OpCase* b) { return a->op < b->op; });
  return out;
}

const OpCase* op_case(Op op) {
  for (const OpCase& c : registered())
    if (c.op == op) return &c;
  return nullptr;
}

std::vector<int> registrations() {
  std::vector<int> n(static_cast<size_t>(Op::Count), 0);
  for (const OpCase& c : registered()) ++n.at(static_cast<size_t>(c.op));
  return n;
}

train::MatT<double> to_mat(const Tensor& t) {
  const int64_t rows = t.shape.size() > 1 ? t.shape[0] : 1;
  const int64_t cols = rows ? t.numel() / rows : 0;
  train::MatT<double> m(rows, cols);
  for (int64_t i = 0; i < t.numel(); ++i) m.data()[i] = t.data[size_t(i)];
  return m;
}

std::string dims(std::initializer_list<int64_t> values) {
  std::string s;
  for (int64_t v : values) {
    if (!s.empty()) s += 'x';
    s += std::to_string(v);
  }
  return s;
}

}  // namespace atlas::op_test
