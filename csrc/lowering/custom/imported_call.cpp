// torch_tpu::imported_call(Tensor[] inputs, str module): a StableHLO module lowered by another
// framework (a JAX function of torch_tpu.pallas.jax_op), called with the inputs as one op of the
// program (ir/imported_module.h). Its functions are named after a fingerprint of the text, so
// two different modules in one fused program never collide and the same one is included once.
#include <functional>
#include <sstream>

#include "ir/imported_module.h"
#include "lowering/core/registry.h"

namespace tpu::lowering {

namespace {

std::vector<ir::Value> lower_imported_call(Ctx& c) {
  const std::string& text = c.arg("module").s;
  std::ostringstream prefix;
  prefix << "imported_" << std::hex << std::hash<std::string>{}(text) << "_";
  ir::ImportedModule module = ir::import_module(text, prefix.str());
  return c.b.call(module, c.arg("inputs").values, c.out_types);
}

}  // namespace

TPU_LOWERING("torch_tpu::imported_call", lower_imported_call, reads({"inputs", "module"}));

}  // namespace tpu::lowering
