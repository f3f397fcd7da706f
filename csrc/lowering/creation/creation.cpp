// Creation ops: fill, zero, arange, linspace, logspace, eye, tril/triu_indices.
#include "lowering/core/elementwise_util.h"
#include "lowering/core/index_util.h"
#include "lowering/core/linalg_util.h"

namespace tpu::lowering {

namespace {

using ir::DType;
using ir::Value;

// fill.Scalar(self, value) / fill.Tensor(self, value): value broadcast to self's shape.
std::vector<Value> lower_fill(Ctx& c) { return {operand_like_out(c, "value", c.out().dtype)}; }

// zero(self)
std::vector<Value> lower_zero(Ctx& c) { return {hlo::full(c.b, c.out(), 0)}; }

// start + i * step (an empty name: start 0, step 1); the length came from meta. CPU computes in
// double for floating outputs.
Value arange(Ctx& c, std::string_view start, std::string_view step) {
  const ir::Type& out = c.out();
  DType ct = ir::is_floating(out.dtype) ? DType::F64 : DType::I64;
  ir::Type t{ct, out.shape};
  Value v = hlo::iota(c.b, t, 0);
  if (!step.empty()) v = hlo::mul(c.b, v, operand(c, step, ct, out.shape));
  if (!start.empty()) v = hlo::add(c.b, operand(c, start, ct, out.shape), v);
  return hlo::convert(c.b, v, out.dtype);
}

std::vector<Value> lower_arange(Ctx& c) { return {arange(c, {}, {})}; }             // arange(end)
std::vector<Value> lower_arange_start(Ctx& c) { return {arange(c, "start", {})}; }  // (start, end)
std::vector<Value> lower_arange_start_step(Ctx& c) {
  return {arange(c, "start", "step")};
}  // (start, end, step)

// linspace(start, end, steps, ...): CPU fills the first half from start and the second half
// from end, which is exact at both ends.
std::vector<Value> lower_linspace(Ctx& c) {
  const ir::Type& out = c.out();
  int64_t steps = c.int_arg("steps");
  DType ct = ir::is_floating(out.dtype) || ir::is_complex(out.dtype)
                 ? (out.dtype == DType::F64 ? DType::F64 : DType::F32)
                 : DType::F64;
  ir::Type t{ct, out.shape};
  // Integer outputs: CPU rounds start and end to the output dtype first, then steps in double and
  // truncates each value (the final convert).
  auto endpoint = [&](std::string_view name) {
    if (ir::is_floating(out.dtype) || ir::is_complex(out.dtype)) return operand(c, name, ct, out.shape);
    return hlo::convert(c.b, operand(c, name, out.dtype, out.shape), ct);
  };
  Value start = endpoint("start"), end = endpoint("end");
  if (steps <= 1) return {hlo::convert(c.b, start, out.dtype)};
  // XLA turns a division by a constant into a multiplication by its reciprocal, which is not
  // exact ((1 - 50) / 49 comes out as -0.9999999999999999, and integer outputs then truncate a
  // whole unit away); one residual correction restores the correctly rounded quotient.
  Value span = hlo::sub(c.b, end, start), count = hlo::full(c.b, t, static_cast<double>(steps - 1));
  Value step = hlo::div(c.b, span, count);
  step = hlo::add(c.b, step, hlo::div(c.b, hlo::sub(c.b, span, hlo::mul(c.b, step, count)), count));
  Value i = hlo::iota(c.b, t, 0);
  Value from_start = hlo::add(c.b, start, hlo::mul(c.b, step, i));
  Value from_end = hlo::sub(
      c.b, end, hlo::mul(c.b, step, hlo::sub(c.b, hlo::full(c.b, t, static_cast<double>(steps - 1)), i)));
  Value first_half = hlo::compare(c.b, i, hlo::full(c.b, t, static_cast<double>(steps / 2)), "LT");
  Value v = hlo::select(c.b, first_half, from_start, from_end);
  return {hlo::convert(c.b, v, out.dtype)};
}

// logspace(start, end, steps, base): base ** linspace(start, end, steps), each half counted from
// its own end as linspace does. CPU first rounds start and end to the output dtype, then works in
// double for floating outputs and in float for integer ones.
std::vector<Value> lower_logspace(Ctx& c) {
  const ir::Type& out = c.out();
  int64_t steps = c.int_arg("steps");
  DType ct = ir::is_floating(out.dtype) ? DType::F64 : DType::F32;
  ir::Type t{ct, out.shape};
  auto rounded = [&](std::string_view name) {
    return hlo::convert(c.b, operand(c, name, out.dtype, out.shape), ct);
  };
  Value start = rounded("start"), end = rounded("end"), base = operand(c, "base", ct, out.shape);
  Value exponent = start;
  if (steps > 1) {
    Value last = hlo::full(c.b, t, static_cast<double>(steps - 1));
    Value step = hlo::div(c.b, hlo::sub(c.b, end, start), last);
    Value i = hlo::iota(c.b, t, 0);
    Value from_start = hlo::add(c.b, start, hlo::mul(c.b, step, i));
    Value from_end = hlo::sub(c.b, end, hlo::mul(c.b, step, hlo::sub(c.b, last, i)));
    Value first_half = hlo::compare(c.b, i, hlo::full(c.b, t, static_cast<double>(steps / 2)), "LT");
    exponent = hlo::select(c.b, first_half, from_start, from_end);
  }
  return {hlo::convert(c.b, hlo::power(c.b, base, exponent), out.dtype)};
}

// eye(n) / eye.m(n, m): ones where row == column (the shape came from meta).
std::vector<Value> lower_eye(Ctx& c) {
  const ir::Type& out = c.out();
  ir::Type idx{DType::I64, out.shape};
  Value diagonal = hlo::compare(c.b, hlo::iota(c.b, idx, 0), hlo::iota(c.b, idx, 1), "EQ");
  return {hlo::convert(c.b, diagonal, out.dtype)};
}

// tril_indices / triu_indices(row, col, offset, dtype, ...): the [2, count] coordinates of the
// triangle of a row x col grid in row-major order (count came from meta).
template <bool Lower>
std::vector<Value> lower_tri_indices(Ctx& c) {
  Value mask = linalg::tri_mask(c.b, {c.int_arg("row"), c.int_arg("col")}, c.int_arg("offset"), Lower);
  Value coords = idx::nonzero_coords(c.b, mask, c.out().shape[1], 0);
  return {hlo::convert(c.b, hlo::transpose(c.b, coords, {1, 0}), c.out().dtype)};
}

}  // namespace

TPU_LOWERING("aten::tril_indices", lower_tri_indices<true>, reads({"row", "col", "offset"}));
TPU_LOWERING("aten::triu_indices", lower_tri_indices<false>, reads({"row", "col", "offset"}));
TPU_LOWERING("aten::eye", lower_eye, reads({}));
TPU_LOWERING("aten::eye.m", lower_eye, reads({}));
TPU_LOWERING("aten::fill.Scalar", lower_fill, reads({"value"}));
TPU_LOWERING("aten::fill.Tensor", lower_fill, reads({"value"}));
TPU_LOWERING("aten::zero", lower_zero, reads({}));
// arange's scalars decide the output length, so they are compile-time (in the key).
TPU_LOWERING("aten::arange", lower_arange, reads({}, {"end"}));
TPU_LOWERING("aten::arange.start", lower_arange_start, reads({}, {"start", "end"}));
TPU_LOWERING("aten::arange.start_step", lower_arange_start_step, reads({}, {"start", "end", "step"}));
TPU_LOWERING("aten::linspace", lower_linspace, reads({"start", "end", "steps"}));
TPU_LOWERING("aten::linspace.Tensor_Tensor", lower_linspace, reads({"start", "end", "steps"}));
TPU_LOWERING("aten::linspace.Tensor_Scalar", lower_linspace, reads({"start", "end", "steps"}));
TPU_LOWERING("aten::linspace.Scalar_Tensor", lower_linspace, reads({"start", "end", "steps"}));
TPU_LOWERING("aten::logspace", lower_logspace, reads({"start", "end", "steps", "base"}));
TPU_LOWERING("aten::logspace.Tensor_Tensor", lower_logspace, reads({"start", "end", "steps", "base"}));
TPU_LOWERING("aten::logspace.Tensor_Scalar", lower_logspace, reads({"start", "end", "steps", "base"}));
TPU_LOWERING("aten::logspace.Scalar_Tensor", lower_logspace, reads({"start", "end", "steps", "base"}));

// Padded execution: constant fills (the padding is filled too, harmlessly).
TPU_PADDED("aten::fill.Scalar", pointwise());
TPU_PADDED("aten::fill.Tensor", pointwise({"value"}));
TPU_PADDED("aten::zero", pointwise());

}  // namespace tpu::lowering
