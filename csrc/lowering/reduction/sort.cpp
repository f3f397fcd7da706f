// sort (values and indices, stable, descending), topk, and the order statistics median,
// nanmedian, kthvalue and mode, as a stablehlo.sort of the values
// together with an iota of indices. NaN orders above every number (last ascending, first
// descending), as in PyTorch's CPU kernels; the sort is always stable, which is a valid result
// for stable=False too and matches the CPU's order of ties.
#include "lowering/core/dynamic.h"
#include "lowering/core/hlo.h"
#include "lowering/core/index_util.h"
#include "lowering/core/reduce_util.h"
#include "lowering/core/registry.h"
#include "lowering/reduction/sort_util.h"

namespace tpu::lowering {

using ir::Builder;
using ir::DType;
using ir::Value;

std::pair<Value, Value> sort_with_indices(Builder& b, const Value& x, int64_t dim, bool descending,
                                          const Value& real) {
  Value idx = hlo::iota(b, hlo::with_dtype(x.type, DType::I64), dim);
  if (x.dim(dim) <= 1) return {x, idx};
  bool fp = ir::is_floating(x.dtype());
  const bool padded = real.valid();
  auto less = [&](Builder& rb, const std::vector<Value>& a) -> std::vector<Value> {
    // descending: lhs goes first when it is greater (or NaN against a number).
    const Value& l = descending ? a[1] : a[0];
    const Value& r = descending ? a[0] : a[1];
    Value lt = hlo::compare(rb, l, r, "LT");
    if (fp) {
      Value l_num = hlo::compare(rb, l, l, "EQ");
      Value r_nan = hlo::compare(rb, r, r, "NE");
      lt = hlo::or_(rb, lt, hlo::and_(rb, l_num, r_nan));
    }
    if (!padded) return {lt};
    // A real element goes before padding; two real ones compare as above.
    const Value &l_real = a[4], &r_real = a[5];
    Value both = hlo::and_(rb, l_real, r_real);
    return {hlo::or_(rb, hlo::and_(rb, both, lt), hlo::and_(rb, l_real, hlo::not_(rb, r_real)))};
  };
  std::vector<Value> operands = {x, idx};
  if (padded) operands.push_back(real);
  std::vector<Value> r = hlo::sort(b, operands, dim, /*stable=*/true, less);
  return {r[0], r[1]};
}

namespace {

std::vector<Value> sort_impl(Ctx& c, int64_t dim_arg, bool descending) {
  Value x = c.tensor("self");
  int64_t dim = hlo::wrap_dim(dim_arg, x.rank());
  if (x.rank() == 0) x = hlo::reshape(c.b, x, {1});
  auto [v, i] = sort_with_indices(c.b, x, dim, descending);
  return {hlo::reshape(c.b, v, c.out(0).shape), hlo::reshape(c.b, i, c.out(1).shape)};
}

// Padded sort and topk (lowering/core/dynamic.h): the padding along `dim` sorts after every
// real element, so the real extent holds the unpadded result.
Value real_elements(Ctx& c, const Value& x) { return valid_mask(c.b, x.shape(), c.dims("self")); }

std::vector<Value> lower_sort_padded(Ctx& c) {
  Value x = c.tensor("self");
  const int64_t dim = hlo::wrap_dim(c.int_arg("dim"), x.rank());
  auto [v, i] = sort_with_indices(c.b, x, dim, c.bool_arg("descending"), real_elements(c, x));
  return {v, i};
}

std::vector<Value> lower_topk_padded(Ctx& c) {
  Value x = c.tensor("self");
  const int64_t dim = hlo::wrap_dim(c.int_arg("dim"), x.rank()), k = c.int_arg("k");
  auto [v, i] = sort_with_indices(c.b, x, dim, c.bool_arg("largest"), real_elements(c, x));
  return {hlo::slice_dim(c.b, v, dim, 0, k), hlo::slice_dim(c.b, i, dim, 0, k)};
}

// sort.stable(self, *, stable?, dim, descending)
std::vector<Value> lower_sort_stable(Ctx& c) {
  return sort_impl(c, c.int_arg("dim"), c.bool_arg("descending"));
}
// sort(self, dim, descending)
std::vector<Value> lower_sort(Ctx& c) { return sort_impl(c, c.int_arg("dim"), c.bool_arg("descending")); }

// topk(self, k, dim, largest, sorted): the first k of a full sort (sorted order is a valid
// answer for sorted=False).
std::vector<Value> lower_topk(Ctx& c) {
  Value x = c.tensor("self");
  int64_t k = c.int_arg("k");
  int64_t dim = hlo::wrap_dim(c.int_arg("dim"), x.rank());
  if (x.rank() == 0) x = hlo::reshape(c.b, x, {1});
  auto [v, i] = sort_with_indices(c.b, x, dim, c.bool_arg("largest"));
  v = hlo::slice_dim(c.b, v, dim, 0, k);
  i = hlo::slice_dim(c.b, i, dim, 0, k);
  return {hlo::reshape(c.b, v, c.out(0).shape), hlo::reshape(c.b, i, c.out(1).shape)};
}

// Element `pos` (an i64 value of the reduced shape) of the sorted values and indices along dim:
// a one-hot mask and a max-reduce, exact for every value (-0.0 and NaN included).
std::pair<Value, Value> pick(Builder& b, const Value& v, const Value& i, int64_t dim, const Value& pos) {
  std::vector<int64_t> kept;
  for (int d = 0; d < v.rank(); ++d)
    if (d != dim) kept.push_back(d);
  Value at = hlo::compare(b, hlo::iota(b, i.type, dim), hlo::broadcast_in_dim(b, pos, i.shape(), kept), "EQ");
  Value vals = hlo::select(b, at, v, hlo::broadcast_in_dim(b, reduce::lowest(b, v.dtype()), v.shape(), {}));
  Value idxs = hlo::select(b, at, i, hlo::full(b, i.type, -1));
  return {reduce::max(b, vals, {dim}), reduce::max(b, idxs, {dim})};
}

enum class Stat { Median, NanMedian };

// The lower median along dim of a stable ascending sort (NaN last). median: the first NaN when
// there is one (value NaN, the index of the first NaN, as on CPU); nanmedian: the lower median
// of the non-NaN values (the first NaN when all are NaN).
std::pair<Value, Value> median_along(Builder& b, const Value& x, int64_t dim, Stat stat) {
  auto [v, i] = sort_with_indices(b, x, dim, false);
  int64_t n = x.dim(dim);
  Value nan = hlo::convert(b, reduce::isnan(b, x), DType::I64);
  Value m = hlo::sub(b, hlo::full(b, ir::Type{DType::I64, reduce::reduced_shape(x.shape(), {dim})}, n),
                     reduce::sum(b, nan, {dim}));  // non-NaN count
  Value pos;
  if (stat == Stat::Median) {
    Value has_nan = hlo::compare(b, m, hlo::scalar_like(b, m, n), "LT");
    pos = hlo::select(b, has_nan, m, hlo::scalar_like(b, m, (n - 1) / 2));
  } else {
    Value m1 = hlo::max(b, hlo::sub(b, m, hlo::scalar_like(b, m, 1)), hlo::scalar_like(b, m, 0));
    pos = hlo::div(b, m1, hlo::scalar_like(b, m, 2));
  }
  return pick(b, v, i, dim, pos);
}

// median(self) / nanmedian(self): over the flattened tensor.
Value median_all(Ctx& c, Stat stat) {
  Value x = hlo::reshape(c.b, c.tensor("self"), {c.tensor("self").type.numel()});
  return hlo::reshape(c.b, median_along(c.b, x, 0, stat).first, c.out().shape);
}
std::vector<Value> lower_median(Ctx& c) { return {median_all(c, Stat::Median)}; }
std::vector<Value> lower_nanmedian(Ctx& c) { return {median_all(c, Stat::NanMedian)}; }

// median.dim / nanmedian.dim(self, dim, keepdim) -> (values, indices)
std::vector<Value> median_dim(Ctx& c, Stat stat) {
  Value x = c.tensor("self");
  int64_t dim = hlo::wrap_dim(c.int_arg("dim"), x.rank());
  if (x.rank() == 0) x = hlo::reshape(c.b, x, {1});
  auto [v, i] = median_along(c.b, x, dim, stat);
  return {hlo::reshape(c.b, v, c.out(0).shape), hlo::reshape(c.b, i, c.out(1).shape)};
}
std::vector<Value> lower_median_dim(Ctx& c) { return median_dim(c, Stat::Median); }
std::vector<Value> lower_nanmedian_dim(Ctx& c) { return median_dim(c, Stat::NanMedian); }

// kthvalue(self, k, dim, keepdim): the k-th smallest (1-based) of a stable sort, NaN last.
std::vector<Value> lower_kthvalue(Ctx& c) {
  Value x = c.tensor("self");
  int64_t k = c.int_arg("k");
  int64_t dim = hlo::wrap_dim(c.int_arg("dim"), x.rank());
  if (x.rank() == 0) x = hlo::reshape(c.b, x, {1});
  auto [v, i] = sort_with_indices(c.b, x, dim, false);
  v = hlo::slice_dim(c.b, v, dim, k - 1, k);
  i = hlo::slice_dim(c.b, i, dim, k - 1, k);
  return {hlo::reshape(c.b, v, c.out(0).shape), hlo::reshape(c.b, i, c.out(1).shape)};
}

// mode(self, dim, keepdim) -> (values, indices): the most frequent value along dim (the smallest
// of equally frequent ones) and the index of its last occurrence, as CPU's kernel finds them: it
// sorts, then scans the runs of equal values (NaN never equals NaN, so each NaN is its own run).
std::vector<Value> lower_mode(Ctx& c) {
  Builder& b = c.b;
  Value x = c.tensor("self");
  int64_t dim = hlo::wrap_dim(c.int_arg("dim"), x.rank());
  if (x.rank() == 0) x = hlo::reshape(b, x, {1});
  const int64_t n = x.dim(dim);
  auto [v, i] = sort_with_indices(b, x, dim, false);
  ir::Type index_type = hlo::with_dtype(v.type, DType::I64);
  Value k = hlo::iota(b, index_type, dim);
  auto differs = [&](const Value& shifted, int64_t edge) {
    Value at_edge = hlo::compare(b, k, hlo::full(b, index_type, static_cast<double>(edge)), "EQ");
    return hlo::or_(b, at_edge, hlo::compare(b, v, shifted, "NE"));
  };
  Value first = hlo::slice_dim(b, v, dim, 0, 1), last = hlo::slice_dim(b, v, dim, n - 1, n);
  Value starts = differs(hlo::concatenate(b, {first, hlo::slice_dim(b, v, dim, 0, n - 1)}, dim), 0);
  Value ends = differs(hlo::concatenate(b, {hlo::slice_dim(b, v, dim, 1, n), last}, dim), n - 1);
  // The position where each element's run started: a running max of the start positions.
  Value zero = hlo::full(b, index_type, 0);
  std::vector<int64_t> window(v.rank(), 1);
  window[dim] = n;
  std::vector<std::pair<int64_t, int64_t>> padding(v.rank(), {0, 0});
  padding[dim] = {n - 1, 0};
  Value run_start =
      hlo::reduce_window(b, {hlo::select(b, starts, k, zero)}, {hlo::constant(b, DType::I64, 0)}, window, {},
                         padding, {}, [](Builder& rb, const std::vector<Value>& a) -> std::vector<Value> {
                           return {hlo::max(rb, a[0], a[1])};
                         })[0];
  Value length = hlo::add(b, hlo::sub(b, k, run_start), hlo::full(b, index_type, 1));
  Value best = reduce::arg_reduce(b, hlo::select(b, ends, length, zero), dim, true).second;
  ir::Shape kept = v.shape();
  kept[dim] = 1;
  best = hlo::reshape(b, best, kept);
  Value value = idx::gather_elements(b, v, best, dim), index = idx::gather_elements(b, i, best, dim);
  return {hlo::reshape(b, value, c.out(0).shape), hlo::reshape(b, index, c.out(1).shape)};
}

}  // namespace

TPU_LOWERING("aten::median", lower_median, reads({"self"}));
TPU_LOWERING("aten::nanmedian", lower_nanmedian, reads({"self"}));
TPU_LOWERING("aten::median.dim", lower_median_dim, reads({"self", "dim"}));
TPU_LOWERING("aten::nanmedian.dim", lower_nanmedian_dim, reads({"self", "dim"}));
TPU_LOWERING("aten::kthvalue", lower_kthvalue, reads({"self", "k", "dim"}));
TPU_LOWERING("aten::sort.stable", lower_sort_stable, reads({"self", "dim", "descending"}));
TPU_LOWERING("aten::sort", lower_sort, reads({"self", "dim", "descending"}));
TPU_LOWERING("aten::topk", lower_topk, reads({"self", "k", "dim", "largest"}));
TPU_LOWERING("aten::mode", lower_mode, reads({"self", "dim"}));
TPU_PADDED("aten::sort.stable", custom(lower_sort_padded));
TPU_PADDED("aten::sort", custom(lower_sort_padded));
TPU_PADDED("aten::topk", custom(lower_topk_padded));

}  // namespace tpu::lowering
