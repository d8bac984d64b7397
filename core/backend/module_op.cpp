#include "core/backend/module_op.h"

namespace atlas {

namespace {

std::vector<const ModuleOp*>& registered() {
  static std::vector<const ModuleOp*> all;
  return all;
}

}  // namespace

const std::vector<const ModuleOp*>& module_ops() { return registered(); }

RegisterModuleOp::RegisterModuleOp(const ModuleOp& op) { registered().push_back(&op); }

const ModuleOp* find_module_op(const std::string& name) {
  for (const ModuleOp* op : registered())
    if (name == op->name) return op;
  return nullptr;
}

std::string module_fallback_line(const ModuleOp& op) {
  return std::string(op.name) + ": " + op.host_work +
         " (inputs downloaded, result uploaded: no device kernel)";
}

std::vector<DTensor> run_module_op_on_host(Backend& be, const ModuleOp& op,
                                           const std::vector<DTensor>& inputs, const void* args) {
  std::vector<DTensor> out;
  for (const Tensor& t : op.host(be.download_all(inputs), args)) out.push_back(be.upload(t));
  return out;
}

bool Backend::supports_module_op(const ModuleOp&) const { return false; }

std::vector<DTensor> Backend::run_module_op(const ModuleOp& op, const std::vector<DTensor>& inputs,
                                            const void* args) {
  if (!supports_module_op(op)) note_fallback(module_fallback_line(op));
  return run_module_op_on_host(*this, op, inputs, args);
}

}  // namespace atlas
