// Logical ops (any dtype in, bool out), bitwise ops on integers and bools, and shifts with
// PyTorch's CPU semantics for out-of-range shift counts.
#include <stdexcept>

#include "lowering/core/elementwise_ops.h"

namespace tpu::lowering {
namespace {

using namespace ew;  // NOLINT
using ir::Builder;
using ir::DType;
using ir::Value;
using Vs = std::vector<Value>;

// --- logical ---------------------------------------------------------------------------------

Value truth(Ctx& ctx, std::string_view name) {
  return to_bool(ctx.b, operand(ctx, name, ctx.tensor(name).dtype(), ctx.out(0).shape));
}

template <Value (*F)(Builder&, const Value&, const Value&)>
Vs lower_logical(Ctx& ctx) {
  return {finish(ctx, F(ctx.b, truth(ctx, "self"), truth(ctx, "other")))};
}

Vs lower_logical_not(Ctx& ctx) { return {finish(ctx, not_(ctx.b, truth(ctx, "self")))}; }

// --- bitwise ---------------------------------------------------------------------------------

template <Value (*F)(Builder&, const Value&, const Value&)>
Vs lower_bitwise(Ctx& ctx) {
  return compute_exact(ctx, {"self", "other"}, [](Builder& b, const Vs& x) { return F(b, x[0], x[1]); });
}

Value bitwise_not_(Builder& b, const Value& x) { return not_(b, x); }

// --- shifts ----------------------------------------------------------------------------------

void require_integer(const Ctx& ctx) {
  if (!ir::is_integral(ctx.out(0).dtype))
    throw std::invalid_argument("bit shifts on tpu need integer tensors");
}

int bits(const Value& x) { return 8 * ir::itemsize(x.dtype()); }

// Counts that are negative or >= the width give 0 (CPU tests the count as signed).
Value shift_left(Builder& b, const Value& x, const Value& n) {
  Value r = hlo::shift_left(b, x, n);
  Value out_of_range = or_(b, lt(b, n, 0), ge(b, n, bits(x)));
  return hlo::select(b, out_of_range, cst(b, x, 0), r);
}

// Out-of-range counts shift by the full width: sign fill for signed types, 0 for unsigned.
Value shift_right(Builder& b, const Value& x, const Value& n) {
  if (ir::is_unsigned(x.dtype())) {
    Value r = hlo::shift_right_logical(b, x, n);
    return hlo::select(b, ge(b, n, bits(x)), cst(b, x, 0), r);
  }
  int max_shift = bits(x) - 1;
  Value r = hlo::shift_right_arithmetic(b, x, n);
  Value fill = hlo::shift_right_arithmetic(b, x, cst(b, x, max_shift));
  return hlo::select(b, or_(b, lt(b, n, 0), ge(b, n, max_shift)), fill, r);
}

template <Value (*F)(Builder&, const Value&, const Value&)>
Vs lower_shift(Ctx& ctx) {
  require_integer(ctx);
  return compute_exact(ctx, {"self", "other"}, [](Builder& b, const Vs& x) { return F(b, x[0], x[1]); });
}

}  // namespace

TPU_LOWERING("aten::logical_and", lower_logical<and_>, reads({"self", "other"}));
TPU_LOWERING("aten::logical_or", lower_logical<or_>, reads({"self", "other"}));
TPU_LOWERING("aten::logical_xor", lower_logical<xor_>, reads({"self", "other"}));
TPU_LOWERING("aten::logical_not", lower_logical_not, reads({"self"}));

TPU_LOWERING("aten::bitwise_and.Tensor", lower_bitwise<and_>, reads({"self", "other"}));
TPU_LOWERING("aten::bitwise_and.Scalar", lower_bitwise<and_>, reads({"self", "other"}));
TPU_LOWERING("aten::bitwise_or.Tensor", lower_bitwise<or_>, reads({"self", "other"}));
TPU_LOWERING("aten::bitwise_or.Scalar", lower_bitwise<or_>, reads({"self", "other"}));
TPU_LOWERING("aten::bitwise_xor.Tensor", lower_bitwise<xor_>, reads({"self", "other"}));
TPU_LOWERING("aten::bitwise_xor.Scalar", lower_bitwise<xor_>, reads({"self", "other"}));
TPU_LOWERING("aten::bitwise_not", ew::unary_exact<bitwise_not_>, reads({"self"}));

TPU_LOWERING("aten::bitwise_left_shift.Tensor", lower_shift<shift_left>, reads({"self", "other"}));
TPU_LOWERING("aten::bitwise_left_shift.Tensor_Scalar", lower_shift<shift_left>, reads({"self", "other"}));
TPU_LOWERING("aten::bitwise_left_shift.Scalar_Tensor", lower_shift<shift_left>, reads({"self", "other"}));
TPU_LOWERING("aten::__lshift__.Tensor", lower_shift<shift_left>, reads({"self", "other"}));
TPU_LOWERING("aten::__lshift__.Scalar", lower_shift<shift_left>, reads({"self", "other"}));
TPU_LOWERING("aten::bitwise_right_shift.Tensor", lower_shift<shift_right>, reads({"self", "other"}));
TPU_LOWERING("aten::bitwise_right_shift.Tensor_Scalar", lower_shift<shift_right>, reads({"self", "other"}));
TPU_LOWERING("aten::bitwise_right_shift.Scalar_Tensor", lower_shift<shift_right>, reads({"self", "other"}));
TPU_LOWERING("aten::__rshift__.Tensor", lower_shift<shift_right>, reads({"self", "other"}));
TPU_LOWERING("aten::__rshift__.Scalar", lower_shift<shift_right>, reads({"self", "other"}));

}  // namespace tpu::lowering
