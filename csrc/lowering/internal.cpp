// Lowerings the glue itself uses (copies between views and dtypes); not ATen ops.
#include "lowering/hlo.h"
#include "lowering/registry.h"

namespace tpu::lowering {

namespace {

// Input (already read through its view) converted and broadcast to the single result type.
std::vector<ir::Value> lower_copy(Ctx& c) {
  ir::Value v = hlo::convert(c.b, c.tensor(0), c.out().dtype);
  return {hlo::broadcast_to(c.b, v, c.out().shape)};
}

}  // namespace

TPU_LOWERING("torch_tpu::view_copy", lower_copy);

}  // namespace tpu::lowering
