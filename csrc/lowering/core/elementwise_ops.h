// Building blocks shared by the elementwise lowerings (unary math, binary arithmetic,
// comparisons, activations): the dtype a computation runs in, drivers that fetch operands
// and convert the result, and small math helpers StableHLO lacks (trunc, signbit, ...).
#pragma once
#include <string>
#include <string_view>
#include <vector>

#include "lowering/core/elementwise_util.h"
#include "lowering/core/hlo.h"
#include "lowering/core/kit.h"
#include "lowering/core/registry.h"

namespace tpu::lowering::ew {

using ir::Builder;
using ir::DType;
using ir::Value;

// Elementwise computation in dtype `t`: every listed argument is converted to `t` and
// broadcast to the output shape (an absent optional argument gives an invalid Value),
// `fn(b, xs)` combines them, the result becomes the output dtype.
template <typename Fn>
std::vector<Value> compute_in(Ctx& ctx, DType t, const std::vector<std::string_view>& args, Fn fn,
                              bool complex_ok = false) {
  if (!complex_ok) require_real(t);
  std::vector<Value> xs;
  for (std::string_view name : args) xs.push_back(ctx.has(name) ? operand_like_out(ctx, name, t) : Value{});
  return {finish(ctx, fn(ctx.b, xs))};
}

// compute_in compute_dtype(output dtype): suits float-only ops (int inputs become the float output
// type) and arithmetic whose output dtype is the promoted dtype.
template <typename Fn>
std::vector<Value> compute(Ctx& ctx, const std::vector<std::string_view>& args, Fn fn,
                           bool complex_ok = false) {
  return compute_in(ctx, compute_dtype(ctx.out(0).dtype), args, fn, complex_ok);
}

// compute_in the output dtype itself, for exact ops (neg, floor, max, select, ...) where
// f16/bf16 need no widening.
template <typename Fn>
std::vector<Value> compute_exact(Ctx& ctx, const std::vector<std::string_view>& args, Fn fn,
                                 bool complex_ok = false) {
  return compute_in(ctx, ctx.out(0).dtype, args, fn, complex_ok);
}

// The input's schema name of most unary ops, and of the special functions that call it x.
inline constexpr char kSelf[] = "self";
inline constexpr char kX[] = "x";

// Unary op with a `Value f(Builder&, const Value&)` body, in compute_dtype(output dtype).
template <Value (*F)(Builder&, const Value&), const char* Input = kSelf>
std::vector<Value> unary(Ctx& ctx) {
  return compute(ctx, {Input}, [](Builder& b, const std::vector<Value>& x) { return F(b, x[0]); });
}

// unary() for ops whose StableHLO op also takes complex values (exp, log, sqrt, ...).
template <Value (*F)(Builder&, const Value&)>
std::vector<Value> unary_complex(Ctx& ctx) {
  return compute(ctx, {"self"}, [](Builder& b, const std::vector<Value>& x) { return F(b, x[0]); }, true);
}

// The same in the output dtype itself.
template <Value (*F)(Builder&, const Value&)>
std::vector<Value> unary_exact(Ctx& ctx) {
  return compute_exact(ctx, {"self"}, [](Builder& b, const std::vector<Value>& x) { return F(b, x[0]); });
}

// --- small helpers -------------------------------------------------------------------------
Value cst(Builder& b, const Value& like, double v);  // constant of like's type
Value is_nan(Builder& b, const Value& x);
Value is_inf(Builder& b, const Value& x);
Value and_(Builder& b, const Value& x, const Value& y);
Value or_(Builder& b, const Value& x, const Value& y);
Value xor_(Builder& b, const Value& x, const Value& y);
Value not_(Builder& b, const Value& x);
Value lt(Builder& b, const Value& x, double v);
Value le(Builder& b, const Value& x, double v);
Value gt(Builder& b, const Value& x, double v);
Value ge(Builder& b, const Value& x, double v);
Value eq(Builder& b, const Value& x, double v);
Value add_c(Builder& b, const Value& x, double v);
Value mul_c(Builder& b, const Value& x, double v);
// x != 0 as a bool tensor (identity for bool).
Value to_bool(Builder& b, const Value& x);
// Rounding toward zero; integers are returned unchanged.
Value trunc(Builder& b, const Value& x);
// Sign bit set (so -0.0 and -nan count as negative); false for unsigned and bool.
Value signbit(Builder& b, const Value& x);
// |mag| with the sign bit of `sgn`.
Value copysign(Builder& b, const Value& mag, const Value& sgn);
// NaN-propagating max/min (IEEE maximum/minimum), matching torch.maximum/minimum.
Value maximum(Builder& b, const Value& x, const Value& y);
Value minimum(Builder& b, const Value& x, const Value& y);
// Horner evaluation, coefficients from the highest degree down.
Value polynomial(Builder& b, const Value& x, const std::vector<double>& coeffs);
Value exp(Builder& b, const Value& x);
Value log(Builder& b, const Value& x);
Value log1p(Builder& b, const Value& x);
Value expm1(Builder& b, const Value& x);
Value sqrt(Builder& b, const Value& x);
Value tanh(Builder& b, const Value& x);
Value sigmoid(Builder& b, const Value& x);
// Largest finite value and lowest finite value of a floating dtype.
double max_finite(DType t);

}  // namespace tpu::lowering::ew
