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

uint32_t OpKey::seed() const {
  if (!module) return 1000u * static_cast<uint32_t>(op);
  uint32_t h = 2166136261u;  // FNV-1a of the name: stable across builds and link orders
  for (const char* c = module->name; *c; ++c) h = (h ^ static_cast<uint8_t>(*c)) * 16777619u;
  return 1000u * static_cast<uint32_t>(Op::Count) + h % 100000u * 1000u;
}

std::vector<const OpCase*> op_cases() {
  std::vector<const OpCase*> out;
  for (const OpCase& c : registered()) out.push_back(&c);
  std::stable_sort(out.begin(), out.end(), [](const OpCase* a, const OpCase* b) {
    if (a->op.op != b->op.op) return a->op.op < b->op.op;
    return a->op.name() < b->op.name();
  });
  return out;
}

const OpCase* op_case(const OpKey& op) {
  for (const OpCase& c : registered())
    if (c.op == op) return &c;
  return nullptr;
}

int registrations(const OpKey& op) {
  int n = 0;
  for (const OpCase& c : registered()) n += c.op == op;
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
