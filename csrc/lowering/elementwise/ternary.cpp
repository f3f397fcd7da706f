// Selection and multi-operand elementwise ops: where, masked_fill, clamp, lerp, addcmul,
// addcdiv.
#include "lowering/core/elementwise_ops.h"

namespace tpu::lowering {
namespace {

using namespace ew;  // NOLINT
using ir::Builder;
using ir::Value;
using Vs = std::vector<Value>;

// A condition/mask argument as bool of the output shape (uint8 masks count by != 0).
Value predicate(Ctx& ctx, std::string_view name) {
  return to_bool(ctx.b, operand(ctx, name, ctx.tensor(name).dtype(), ctx.out(0).shape));
}

// where/masked_fill only select, so complex values pass through.
Vs lower_where(Ctx& ctx) {
  ir::DType t = ctx.out(0).dtype;
  return {hlo::select(ctx.b, predicate(ctx, "condition"), operand_like_out(ctx, "self", t),
                      operand_like_out(ctx, "other", t))};
}

// masked_fill(self, mask, value): value (Scalar or 0-d tensor) takes self's dtype.
Vs lower_masked_fill(Ctx& ctx) {
  ir::DType t = ctx.out(0).dtype;
  return {hlo::select(ctx.b, predicate(ctx, "mask"), operand_like_out(ctx, "value", t),
                      operand_like_out(ctx, "self", t))};
}

// clamp: min(max(x, lo), hi), NaN-propagating like CPU (a NaN bound gives NaN too); either
// bound may be absent.
Value clamp(Builder& b, const Vs& x) {
  Value r = x[0];
  if (x[1].valid()) r = maximum(b, r, x[1]);
  if (x[2].valid()) r = minimum(b, r, x[2]);
  return r;
}
Vs lower_clamp(Ctx& ctx) { return compute_exact(ctx, {"self", "min", "max"}, clamp); }
Vs lower_clamp_min(Ctx& ctx) {
  return compute_exact(ctx, {"self", "min"}, [](Builder& b, const Vs& x) { return maximum(b, x[0], x[1]); });
}
Vs lower_clamp_max(Ctx& ctx) {
  return compute_exact(ctx, {"self", "max"}, [](Builder& b, const Vs& x) { return minimum(b, x[0], x[1]); });
}

// lerp as CPU: from the nearer end, self + w (end - self) for |w| < 0.5, else
// end - (end - self)(1 - w), so that w = 1 gives exactly `end`.
Vs lower_lerp(Ctx& ctx) {
  return compute(ctx, {"self", "end", "weight"}, [](Builder& b, const Vs& x) {
    const Value &self = x[0], &end = x[1], &w = x[2];
    Value diff = hlo::sub(b, end, self);
    Value low = hlo::add(b, self, hlo::mul(b, w, diff));
    Value high = hlo::sub(b, end, hlo::mul(b, diff, hlo::sub(b, cst(b, w, 1), w)));
    return hlo::select(b, lt(b, abs(b, w), 0.5), low, high);
  });
}

// self + value * t1 * t2 and self + value * t1 / t2, evaluated left to right as CPU does.
Vs lower_addcmul(Ctx& ctx) {
  return compute(ctx, {"self", "tensor1", "tensor2", "value"}, [](Builder& b, const Vs& x) {
    return hlo::add(b, x[0], hlo::mul(b, hlo::mul(b, x[3], x[1]), x[2]));
  });
}
Vs lower_addcdiv(Ctx& ctx) {
  return compute(ctx, {"self", "tensor1", "tensor2", "value"}, [](Builder& b, const Vs& x) {
    return hlo::add(b, x[0], hlo::div(b, hlo::mul(b, x[3], x[1]), x[2]));
  });
}

}  // namespace

TPU_LOWERING("aten::where.self", lower_where, reads({"condition", "self", "other"}));
TPU_LOWERING("aten::masked_fill.Scalar", lower_masked_fill, reads({"self", "mask", "value"}));
TPU_LOWERING("aten::masked_fill.Tensor", lower_masked_fill, reads({"self", "mask", "value"}));
TPU_LOWERING("aten::clamp", lower_clamp, reads({"self", "min", "max"}));
TPU_LOWERING("aten::clamp.Tensor", lower_clamp, reads({"self", "min", "max"}));
TPU_LOWERING("aten::clamp_min", lower_clamp_min, reads({"self", "min"}));
TPU_LOWERING("aten::clamp_min.Tensor", lower_clamp_min, reads({"self", "min"}));
TPU_LOWERING("aten::clamp_max", lower_clamp_max, reads({"self", "max"}));
TPU_LOWERING("aten::clamp_max.Tensor", lower_clamp_max, reads({"self", "max"}));
TPU_LOWERING("aten::lerp.Scalar", lower_lerp, reads({"self", "end", "weight"}));
TPU_LOWERING("aten::lerp.Tensor", lower_lerp, reads({"self", "end", "weight"}));
TPU_LOWERING("aten::addcmul", lower_addcmul, reads({"self", "tensor1", "tensor2", "value"}));
TPU_LOWERING("aten::addcdiv", lower_addcdiv, reads({"self", "tensor1", "tensor2", "value"}));

}  // namespace tpu::lowering
