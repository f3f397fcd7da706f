// Shared steps of elementwise lowerings: fetch an argument converted and broadcast.
#pragma once
#include "lowering/core/hlo.h"
#include "lowering/core/promotion.h"
#include "lowering/core/registry.h"

namespace tpu::lowering {

// Argument `name` (tensor or scalar) converted to `dtype` and broadcast to `shape`.
ir::Value operand(Ctx& ctx, std::string_view name, ir::DType dtype, const ir::Shape& shape);
// Argument `name` converted to `dtype` and broadcast to the first output's shape.
ir::Value operand_like_out(Ctx& ctx, std::string_view name, ir::DType dtype);

}  // namespace tpu::lowering
