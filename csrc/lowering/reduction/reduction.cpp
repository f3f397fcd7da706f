// Reductions over dimension lists: sum, mean, prod, amax/amin, max/min (full), all/any,
// count_nonzero, nansum, logsumexp, trace, hash_tensor. The result dtype (int/bool sums -> int64, `dtype=`)
// comes from the meta kernels; accumulation follows the CPU kernels (bf16/f16 in float, the input cast to the
// result dtype first), and the result is reshaped to the meta shape, which covers keepdim.
#include <cmath>
#include <stdexcept>
#include <string>

#include "lowering/core/hlo.h"
#include "lowering/core/reduce_util.h"
#include "lowering/core/registry.h"

namespace tpu::lowering {

namespace {

using ir::DType;
using ir::Value;
using ReduceFn = Value (*)(ir::Builder&, const Value&, const std::vector<int64_t>&);

// x cast to the result dtype (as TensorIterator does for `dtype=`), then to its accumulation type.
Value to_acc(Ctx& c, const Value& x, DType out) {
  Value v = x;
  if (v.dtype() != out) {
    // Casts to bool mean `!= 0` (stablehlo.convert to i1 is not specified that way).
    if (out == DType::Bool && !ir::is_complex(v.dtype()))
      v = hlo::compare(c.b, v, hlo::scalar_like(c.b, v, 0), "NE");
    else
      v = hlo::convert(c.b, v, out);
  }
  return hlo::convert(c.b, v, compute_dtype(out));
}

Value reduce_with(Ctx& c, ReduceFn fn, const std::vector<int64_t>& dims) {
  Value x = to_acc(c, c.tensor("self"), c.out().dtype);
  return finish(c, fn(c.b, x, dims));
}

// sum.dim_IntList(self, dim?, keepdim, *, dtype) and sum(self, *, dtype).
std::vector<Value> lower_sum_dim(Ctx& c) {
  return {reduce_with(c, reduce::sum, reduce::dims_arg(c, "dim", c.tensor("self").rank()))};
}
std::vector<Value> lower_sum(Ctx& c) {
  return {reduce_with(c, reduce::sum, reduce::dims_or_all({}, c.tensor("self").rank()))};
}

std::vector<Value> lower_nansum(Ctx& c) {
  Value x = c.tensor("self");
  if (ir::is_floating(x.dtype())) x = hlo::select(c.b, reduce::isnan(c.b, x), hlo::scalar_like(c.b, x, 0), x);
  Value acc = to_acc(c, x, c.out().dtype);
  return {finish(c, reduce::sum(c.b, acc, reduce::dims_arg(c, "dim", x.rank())))};
}

// On padded values (docs/dynamic_shapes.md) the padding is summed as zeros and the count is of
// the real sizes.
Value mean_of(Ctx& c, const std::vector<int64_t>& dims) {
  const Dims& padded = c.dims("self");
  Value x =
      to_acc(c, fill_padding(c.b, c.tensor("self"), padded, hlo::constant(c.b, c.tensor("self").dtype(), 0)),
             c.out().dtype);
  Value s = reduce::sum(c.b, x, dims);
  // Divided in the accumulation type, then rounded (bf16 means match CPU bit for bit).
  Value n = element_count(c.b, x, padded, dims, s.dtype());
  return finish(c, hlo::div(c.b, s, hlo::broadcast_in_dim(c.b, n, s.shape(), {})));
}
std::vector<Value> lower_mean_dim(Ctx& c) {
  return {mean_of(c, reduce::dims_arg(c, "dim", c.tensor("self").rank()))};
}
std::vector<Value> lower_mean(Ctx& c) {
  return {mean_of(c, reduce::dims_or_all({}, c.tensor("self").rank()))};
}

std::vector<Value> lower_prod(Ctx& c) {
  return {reduce_with(c, reduce::prod, reduce::dims_or_all({}, c.tensor("self").rank()))};
}
std::vector<Value> lower_prod_dim(Ctx& c) {
  return {reduce_with(c, reduce::prod, reduce::dims_arg(c, "dim", c.tensor("self").rank()))};
}

// amax/amin/max/min keep the input dtype: no accumulation type needed, NaN propagates.
std::vector<Value> lower_amax(Ctx& c) {
  return {finish(c, reduce::max(c.b, c.tensor("self"), reduce::dims_arg(c, "dim", c.tensor("self").rank())))};
}
std::vector<Value> lower_amin(Ctx& c) {
  return {finish(c, reduce::min(c.b, c.tensor("self"), reduce::dims_arg(c, "dim", c.tensor("self").rank())))};
}
std::vector<Value> lower_max(Ctx& c) {
  return {finish(c, reduce::max(c.b, c.tensor("self"), reduce::dims_or_all({}, c.tensor("self").rank())))};
}
std::vector<Value> lower_min(Ctx& c) {
  return {finish(c, reduce::min(c.b, c.tensor("self"), reduce::dims_or_all({}, c.tensor("self").rank())))};
}

// aminmax(self, *, dim?, keepdim) -> (min, max)
std::vector<Value> lower_aminmax(Ctx& c) {
  std::vector<int64_t> dims = reduce::dims_arg(c, "dim", c.tensor("self").rank());
  return {finish(c, reduce::min(c.b, c.tensor("self"), dims), 0),
          finish(c, reduce::max(c.b, c.tensor("self"), dims), 1)};
}

// x != 0 as bool (NaN counts as true, as in C++).
Value nonzero(Ctx& c, const Value& x) {
  if (x.dtype() == DType::Bool) return x;
  return hlo::compare(c.b, x, hlo::scalar_like(c.b, x, 0), "NE");
}

Value all_any(Ctx& c, const std::vector<int64_t>& dims, bool all) {
  Value x = nonzero(c, c.tensor("self"));
  Value r = all ? reduce::prod(c.b, x, dims) : reduce::sum(c.b, x, dims);  // and / or on i1
  return finish(c, r);                                                     // bool, or uint8 for uint8 inputs
}
std::vector<Value> lower_all(Ctx& c) {
  return {all_any(c, reduce::dims_or_all({}, c.tensor("self").rank()), true)};
}
std::vector<Value> lower_any(Ctx& c) {
  return {all_any(c, reduce::dims_or_all({}, c.tensor("self").rank()), false)};
}
std::vector<Value> lower_all_dim(Ctx& c) {
  return {all_any(c, reduce::dims_arg(c, "dim", c.tensor("self").rank()), true)};
}
std::vector<Value> lower_any_dim(Ctx& c) {
  return {all_any(c, reduce::dims_arg(c, "dim", c.tensor("self").rank()), false)};
}
// all.dims / any.dims: unlike sum, an explicit empty list reduces nothing (None reduces all).
std::vector<int64_t> dims_list_or_none(Ctx& c) {
  if (c.has("dim") && c.ints("dim").empty()) return {};
  return reduce::dims_arg(c, "dim", c.tensor("self").rank());
}
std::vector<Value> lower_all_dims(Ctx& c) { return {all_any(c, dims_list_or_none(c), true)}; }
std::vector<Value> lower_any_dims(Ctx& c) { return {all_any(c, dims_list_or_none(c), false)}; }

// count_nonzero.dim_IntList(self, dim[]): an empty list counts over every dimension.
std::vector<Value> lower_count_nonzero(Ctx& c) {
  Value x = hlo::convert(c.b, nonzero(c, c.tensor("self")), DType::I64);
  return {finish(c, reduce::sum(c.b, x, reduce::dims_arg(c, "dim", x.rank())))};
}

// logsumexp(self, dim[], keepdim): max-shifted, with infinite maxima replaced by 0 as the CPU
// kernel does (so a row of -inf gives -inf, and +inf gives +inf, not NaN).
std::vector<Value> lower_logsumexp(Ctx& c) {
  ir::Builder& b = c.b;
  DType acc = compute_dtype(c.out().dtype);
  Value x = hlo::convert(b, c.tensor("self"), acc);
  std::vector<int64_t> dims = reduce::dims_arg(c, "dim", x.rank());
  Value m = reduce::max(b, x, dims);
  Value inf_m = hlo::compare(b, hlo::abs(b, m), hlo::full(b, m.type, INFINITY), "EQ");
  m = hlo::select(b, inf_m, hlo::full(b, m.type, 0), m);
  Value shifted = hlo::sub(b, x, reduce::expand_back(b, m, x.shape(), dims));
  Value s = reduce::sum(b, hlo::exp(b, shifted), dims);
  return {finish(c, hlo::add(b, hlo::log(b, s), m))};
}

// trace(self): the diagonal's sum. CPU accumulates in double for float (and in float for
// bf16/f16, int64 for integers).
std::vector<Value> lower_trace(Ctx& c) {
  Value x = c.tensor("self");
  DType out = c.out().dtype;
  DType acc = out == DType::F32 ? DType::F64 : compute_dtype(out);
  Value v = hlo::convert(c.b, hlo::convert(c.b, x, out), acc);
  ir::Type index{DType::I64, x.shape()};
  Value diagonal = hlo::compare(c.b, hlo::iota(c.b, index, 0), hlo::iota(c.b, index, 1), "EQ");
  v = hlo::select(c.b, diagonal, v, hlo::full(c.b, v.type, 0));
  return {finish(c, reduce::sum(c.b, v, {0, 1}))};
}

// hash_tensor(self, dim[], *, keepdim, mode): the xor of the elements' 64-bit patterns, each
// element widened to float64 (floating types) or int64 (integers, bool) first; uint64 result.
std::vector<Value> lower_hash_tensor(Ctx& c) {
  if (c.int_arg("mode") != 0)
    throw std::invalid_argument("Unknown hash_tensor mode: " + std::to_string(c.int_arg("mode")));
  Value x = c.tensor("self");
  if (ir::is_complex(x.dtype())) throw std::invalid_argument("hash_tensor: complex inputs are not supported");
  Value wide = hlo::convert(c.b, x, ir::is_floating(x.dtype()) ? DType::F64 : DType::I64);
  Value bits = hlo::bitcast_convert(c.b, wide, DType::U64);
  Value h = hlo::reduce(c.b, bits, hlo::constant_int(c.b, DType::U64, 0),
                        reduce::dims_arg(c, "dim", x.rank()), hlo::Combiner::Xor);
  return {finish(c, h)};
}

}  // namespace

TPU_LOWERING("aten::sum.dim_IntList", lower_sum_dim, reads({"self", "dim"}));
TPU_LOWERING("aten::sum", lower_sum, reads({"self"}));
TPU_LOWERING("aten::nansum", lower_nansum, reads({"self", "dim"}));
TPU_LOWERING("aten::mean.dim", lower_mean_dim, reads({"self", "dim"}));
TPU_LOWERING("aten::mean", lower_mean, reads({"self"}));
TPU_LOWERING("aten::prod", lower_prod, reads({"self"}));
TPU_LOWERING("aten::prod.dim_int", lower_prod_dim, reads({"self", "dim"}));
TPU_LOWERING("aten::amax", lower_amax, reads({"self", "dim"}));
TPU_LOWERING("aten::amin", lower_amin, reads({"self", "dim"}));
TPU_LOWERING("aten::max", lower_max, reads({"self"}));
TPU_LOWERING("aten::min", lower_min, reads({"self"}));
TPU_LOWERING("aten::aminmax", lower_aminmax, reads({"self", "dim"}));
TPU_LOWERING("aten::all", lower_all, reads({"self"}));
TPU_LOWERING("aten::any", lower_any, reads({"self"}));
TPU_LOWERING("aten::all.dim", lower_all_dim, reads({"self", "dim"}));
TPU_LOWERING("aten::any.dim", lower_any_dim, reads({"self", "dim"}));
TPU_LOWERING("aten::all.dims", lower_all_dims, reads({"self", "dim"}));
TPU_LOWERING("aten::any.dims", lower_any_dims, reads({"self", "dim"}));
TPU_LOWERING("aten::count_nonzero.dim_IntList", lower_count_nonzero, reads({"self", "dim"}));
TPU_LOWERING("aten::logsumexp", lower_logsumexp, reads({"self", "dim"}));
TPU_LOWERING("aten::trace", lower_trace, reads({"self"}));
TPU_LOWERING("aten::hash_tensor", lower_hash_tensor, reads({"self", "dim", "mode"}));

// Padded execution: the padding filled with the reduction's identity (sums, products, max/min
// and their arg forms, any/all, logsumexp); mean counts the real sizes itself.
TPU_PADDED("aten::sum.dim_IntList", masked({{"self", Neutral::Zero}}));
TPU_PADDED("aten::sum", masked({{"self", Neutral::Zero}}));
TPU_PADDED("aten::nansum", masked({{"self", Neutral::Zero}}));
TPU_PADDED("aten::mean.dim", custom());
TPU_PADDED("aten::mean", custom());
TPU_PADDED("aten::prod", masked({{"self", Neutral::One}}));
TPU_PADDED("aten::prod.dim_int", masked({{"self", Neutral::One}}));
TPU_PADDED("aten::amax", masked({{"self", Neutral::Lowest}}));
TPU_PADDED("aten::amin", masked({{"self", Neutral::Highest}}));
TPU_PADDED("aten::max", masked({{"self", Neutral::Lowest}}));
TPU_PADDED("aten::min", masked({{"self", Neutral::Highest}}));
TPU_PADDED("aten::all", masked({{"self", Neutral::One}}));
TPU_PADDED("aten::any", masked({{"self", Neutral::Zero}}));
TPU_PADDED("aten::all.dim", masked({{"self", Neutral::One}}));
TPU_PADDED("aten::any.dim", masked({{"self", Neutral::Zero}}));
TPU_PADDED("aten::all.dims", masked({{"self", Neutral::One}}));
TPU_PADDED("aten::any.dims", masked({{"self", Neutral::Zero}}));
TPU_PADDED("aten::count_nonzero.dim_IntList", masked({{"self", Neutral::Zero}}));
TPU_PADDED("aten::logsumexp", masked({{"self", Neutral::Lowest}}));

}  // namespace tpu::lowering
