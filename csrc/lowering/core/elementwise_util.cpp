#include "lowering/core/elementwise_util.h"

namespace tpu::lowering {

ir::Value operand(Ctx& ctx, std::string_view name, ir::DType dtype, const ir::Shape& shape) {
  ir::Value v = hlo::convert(ctx.b, ctx.tensor(name), dtype);
  return hlo::broadcast_to(ctx.b, v, shape);
}

ir::Value operand_like_out(Ctx& ctx, std::string_view name, ir::DType dtype) {
  return operand(ctx, name, dtype, ctx.out(0).shape);
}

}  // namespace tpu::lowering
