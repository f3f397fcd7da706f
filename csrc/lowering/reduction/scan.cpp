// Cumulative ops along one dimension: cumsum, cumprod, cummax/cummin (values and indices) and
// logcumsumexp. Each is a stablehlo.reduce_window whose window covers the whole dimension and
// whose low padding is size-1, so output i reduces elements [0, i]: exact, and the form XLA
// itself uses for cumulative reductions on TPU.
#include <cmath>

#include "lowering/core/hlo.h"
#include "lowering/core/reduce_util.h"
#include "lowering/core/registry.h"

namespace tpu::lowering {

namespace {

using ir::Builder;
using ir::DType;
using ir::Value;

// Inclusive prefix reduction of xs (same shapes) along `dim` with `body` and `inits`.
std::vector<Value> prefix(Builder& b, const std::vector<Value>& xs, const std::vector<Value>& inits,
                          int64_t dim, const Builder::RegionBody& body) {
  int rank = xs[0].rank();
  int64_t n = xs[0].dim(dim);
  std::vector<int64_t> window(rank, 1);
  window[dim] = n;
  std::vector<std::pair<int64_t, int64_t>> padding(rank, {0, 0});
  padding[dim].first = n - 1;
  return hlo::reduce_window(b, xs, inits, window, {}, padding, {}, body);
}

// The input as a rank >= 1 value and the normalised dim.
std::pair<Value, int64_t> input(Ctx& c) {
  Value x = c.tensor("self");
  int64_t dim = hlo::wrap_dim(c.int_arg("dim"), x.rank());
  if (x.rank() == 0) x = hlo::reshape(c.b, x, {1});
  return {x, dim};
}

// cumsum/cumprod(self, dim, *, dtype): cast to the result dtype, accumulate in float for
// bf16/f16 (the CPU kernel keeps a float running sum and rounds each output).
Value cumulative(Ctx& c, hlo::Combiner op, double init) {
  auto [x, dim] = input(c);
  DType out = c.out().dtype;
  x = hlo::convert(c.b, hlo::convert(c.b, x, out), compute_dtype(out));
  if (x.dim(dim) == 0) return finish(c, x);
  DType t = x.dtype();
  Value r = prefix(c.b, {x}, {hlo::constant(c.b, t, init)}, dim, hlo::combiner_body(op))[0];
  return finish(c, r);
}
std::vector<Value> lower_cumsum(Ctx& c) { return {cumulative(c, hlo::Combiner::Add, 0)}; }
std::vector<Value> lower_cumprod(Ctx& c) { return {cumulative(c, hlo::Combiner::Mul, 1)}; }

// cummax/cummin(self, dim) -> (values, indices). The CPU loop replaces its running value when
// the new element is NaN or compares >= (<=) to it, so NaN sticks and ties take the LATEST index.
// Values are a NaN-propagating running max; element j replaced the running value exactly when
// it equals the running value at j (or is NaN), so the index is the running max of those j.
// (Two single-operand scans: XLA:CPU's long-window rewrite mishandles a variadic (f32, s64)
// reduce_window.)
std::vector<Value> cum_extreme(Ctx& c, bool is_max) {
  Builder& b = c.b;
  auto [x, dim] = input(c);
  if (x.dim(dim) == 0) return {finish(c, x, 0), finish(c, hlo::convert(b, x, DType::I64), 1)};
  DType t = x.dtype();
  bool fp = ir::is_floating(t);
  Value init = is_max ? reduce::lowest(b, t) : reduce::highest(b, t);
  Value v = prefix(b, {x}, {init}, dim, [&](Builder& rb, const std::vector<Value>& a) -> std::vector<Value> {
    if (t == DType::Bool)
      return {hlo::combine(rb, is_max ? hlo::Combiner::Or : hlo::Combiner::And, a[0], a[1])};
    Value m = is_max ? hlo::max(rb, a[0], a[1]) : hlo::min(rb, a[0], a[1]);
    if (!fp) return {m};
    m = hlo::select(rb, hlo::compare(rb, a[1], a[1], "NE"), a[1], m);
    return {hlo::select(rb, hlo::compare(rb, a[0], a[0], "NE"), a[0], m)};
  })[0];
  Value took = hlo::compare(b, x, v, "EQ");
  if (fp) took = hlo::or_(b, took, reduce::isnan(b, x));
  Value idx = hlo::iota(b, hlo::with_dtype(x.type, DType::I64), dim);
  Value marks = hlo::select(b, took, idx, hlo::full(b, idx.type, 0));
  Value i = prefix(b, {marks}, {hlo::constant_int(b, DType::I64, 0)}, dim,
                   [&](Builder& rb, const std::vector<Value>& a) -> std::vector<Value> {
                     return {hlo::max(rb, a[0], a[1])};
                   })[0];
  return {finish(c, v, 0), finish(c, i, 1)};
}
std::vector<Value> lower_cummax(Ctx& c) { return cum_extreme(c, true); }
std::vector<Value> lower_cummin(Ctx& c) { return cum_extreme(c, false); }

// logcumsumexp(self, dim): running log(exp(a) + exp(b)) = max + log1p(exp(min - max)), with
// the CPU kernel's special case for equal infinities (returns the value itself).
std::vector<Value> lower_logcumsumexp(Ctx& c) {
  auto [x, dim] = input(c);
  x = hlo::convert(c.b, x, compute_dtype(c.out().dtype));
  if (x.dim(dim) == 0) return {finish(c, x)};
  auto body = [&](Builder& rb, const std::vector<Value>& a) -> std::vector<Value> {
    const Value &p = a[0], &q = a[1];
    Value q_nan = hlo::compare(rb, q, q, "NE");
    Value lo = hlo::select(rb, q_nan, q, hlo::min(rb, p, q));
    Value hi = hlo::select(rb, q_nan, q, hlo::max(rb, p, q));
    Value r = hlo::add(rb, hlo::log1p(rb, hlo::exp(rb, hlo::sub(rb, lo, hi))), hi);
    Value lo_finite = hlo::compare(rb, hlo::abs(rb, lo), hlo::constant(rb, lo.dtype(), INFINITY), "LT");
    Value regular = hlo::or_(rb, hlo::compare(rb, lo, hi, "NE"), lo_finite);
    return {hlo::select(rb, regular, r, p)};
  };
  Value r = prefix(c.b, {x}, {hlo::constant(c.b, x.dtype(), -INFINITY)}, dim, body)[0];
  return {finish(c, r)};
}

}  // namespace

TPU_LOWERING("aten::cumsum", lower_cumsum, reads({"self", "dim"}));
TPU_LOWERING("aten::cumprod", lower_cumprod, reads({"self", "dim"}));
TPU_LOWERING("aten::cummax", lower_cummax, reads({"self", "dim"}));
TPU_LOWERING("aten::cummin", lower_cummin, reads({"self", "dim"}));
// Registered on the public op: _logcumsumexp has no meta kernel for the output types.
TPU_LOWERING("aten::logcumsumexp", lower_logcumsumexp, reads({"self", "dim"}));

// Padded execution: a running reduction reads only earlier positions, so the padding at the end
// of a dimension never reaches a real element.
TPU_PADDED("aten::cumsum", pointwise());
TPU_PADDED("aten::cumprod", pointwise());
TPU_PADDED("aten::cummax", pointwise());
TPU_PADDED("aten::cummin", pointwise());
TPU_PADDED("aten::logcumsumexp", pointwise());

}  // namespace tpu::lowering
