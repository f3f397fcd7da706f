#include "lowering/core/elementwise_util.h"

namespace tpu::lowering {

ir::Value operand(Ctx& ctx, int i, ir::DType dtype, const ir::Shape& shape) {
  ir::Value v = hlo::convert(ctx.b, ctx.tensor(i), dtype);
  return hlo::broadcast_to(ctx.b, v, shape);
}

ir::Value operand_like_out(Ctx& ctx, int i, ir::DType dtype) {
  return operand(ctx, i, dtype, ctx.out(0).shape);
}

}  // namespace tpu::lowering
