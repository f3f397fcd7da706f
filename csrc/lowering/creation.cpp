// Creation ops: fill, zero, arange, linspace, eye.
#include "lowering/elementwise_util.h"

namespace tpu::lowering {

namespace {

using ir::DType;
using ir::Value;

// fill.Scalar(self, value) / fill.Tensor(self, value): value broadcast to self's shape.
std::vector<Value> lower_fill(Ctx& c) { return {operand_like_out(c, 1, c.out().dtype)}; }

// zero(self)
std::vector<Value> lower_zero(Ctx& c) { return {hlo::full(c.b, c.out(), 0)}; }

DType compute_type(DType out) { return ir::is_floating(out) ? (out == DType::F64 ? DType::F64 : DType::F32) : DType::I64; }

// start + i * step; the length came from meta. CPU computes in double for floating outputs.
Value arange(Ctx& c, int start, int step) {
  const ir::Type& out = c.out();
  DType ct = ir::is_floating(out.dtype) ? DType::F64 : DType::I64;
  ir::Type t{ct, out.shape};
  Value v = hlo::iota(c.b, t, 0);
  if (step >= 0) v = hlo::mul(c.b, v, operand(c, step, ct, out.shape));
  if (start >= 0) v = hlo::add(c.b, operand(c, start, ct, out.shape), v);
  return hlo::convert(c.b, v, out.dtype);
}

std::vector<Value> lower_arange(Ctx& c) { return {arange(c, -1, -1)}; }             // arange(end)
std::vector<Value> lower_arange_start(Ctx& c) { return {arange(c, 0, -1)}; }        // (start, end)
std::vector<Value> lower_arange_start_step(Ctx& c) { return {arange(c, 0, 2)}; }    // (start, end, step)

// linspace(start, end, steps, ...): CPU fills the first half from start and the second half
// from end, which is exact at both ends.
std::vector<Value> lower_linspace(Ctx& c) {
  const ir::Type& out = c.out();
  int64_t steps = c.int_arg(2);
  DType ct = ir::is_floating(out.dtype) || ir::is_complex(out.dtype) ? (out.dtype == DType::F64 ? DType::F64 : DType::F32) : DType::F64;
  ir::Type t{ct, out.shape};
  Value start = operand(c, 0, ct, out.shape), end = operand(c, 1, ct, out.shape);
  if (steps <= 1) return {hlo::convert(c.b, start, out.dtype)};
  Value step = hlo::div(c.b, hlo::sub(c.b, end, start), hlo::full(c.b, t, static_cast<double>(steps - 1)));
  Value i = hlo::iota(c.b, t, 0);
  Value from_start = hlo::add(c.b, start, hlo::mul(c.b, step, i));
  Value from_end = hlo::sub(c.b, end, hlo::mul(c.b, step, hlo::sub(c.b, hlo::full(c.b, t, static_cast<double>(steps - 1)), i)));
  Value first_half = hlo::compare(c.b, i, hlo::full(c.b, t, static_cast<double>(steps / 2)), "LT");
  Value v = hlo::select(c.b, first_half, from_start, from_end);
  if (!ir::is_floating(out.dtype)) v = hlo::unary(c.b, "stablehlo.floor", v);  // CPU truncates toward -inf? see test
  return {hlo::convert(c.b, v, out.dtype)};
}

// eye(n) / eye.m(n, m): ones where row == column (the shape came from meta).
std::vector<Value> lower_eye(Ctx& c) {
  const ir::Type& out = c.out();
  ir::Type idx{DType::I64, out.shape};
  Value diagonal = hlo::compare(c.b, hlo::iota(c.b, idx, 0), hlo::iota(c.b, idx, 1), "EQ");
  return {hlo::convert(c.b, diagonal, out.dtype)};
}

}  // namespace

TPU_LOWERING("aten::eye", lower_eye);
TPU_LOWERING("aten::eye.m", lower_eye);
TPU_LOWERING("aten::fill.Scalar", lower_fill);
TPU_LOWERING("aten::fill.Tensor", lower_fill);
TPU_LOWERING("aten::zero", lower_zero);
// arange's scalars decide the output length, so they are compile-time (in the key).
TPU_LOWERING("aten::arange", lower_arange, 0b1);
TPU_LOWERING("aten::arange.start", lower_arange_start, 0b11);
TPU_LOWERING("aten::arange.start_step", lower_arange_start_step, 0b111);
TPU_LOWERING("aten::linspace", lower_linspace);
TPU_LOWERING("aten::linspace.Tensor_Tensor", lower_linspace);
TPU_LOWERING("aten::linspace.Tensor_Scalar", lower_linspace);
TPU_LOWERING("aten::linspace.Scalar_Tensor", lower_linspace);

}  // namespace tpu::lowering
