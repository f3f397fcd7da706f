// sort (values and indices, stable, descending) and topk, as a stablehlo.sort of the values
// together with an iota of indices. NaN orders above every number (last ascending, first
// descending), as in PyTorch's CPU kernels; the sort is always stable, which is a valid result
// for stable=False too and matches the CPU's order of ties.
#include "lowering/hlo.h"
#include "lowering/registry.h"

namespace tpu::lowering {

namespace {

using ir::Builder;
using ir::DType;
using ir::Value;

// (values, indices) of x sorted along dim.
std::pair<Value, Value> sort_with_indices(Builder& b, const Value& x, int64_t dim, bool descending) {
  Value idx = hlo::iota(b, hlo::with_dtype(x.type, DType::I64), dim);
  if (x.dim(dim) <= 1) return {x, idx};
  bool fp = ir::is_floating(x.dtype());
  auto less = [&](Builder& rb, const std::vector<Value>& a) -> std::vector<Value> {
    // descending: lhs goes first when it is greater (or NaN against a number).
    const Value& l = descending ? a[1] : a[0];
    const Value& r = descending ? a[0] : a[1];
    Value lt = hlo::compare(rb, l, r, "LT");
    if (fp) {
      Value l_num = hlo::compare(rb, l, l, "EQ");
      Value r_nan = hlo::compare(rb, r, r, "NE");
      lt = hlo::binary(rb, "stablehlo.or", lt, hlo::binary(rb, "stablehlo.and", l_num, r_nan));
    }
    return {lt};
  };
  std::vector<ir::Type> region_args;
  for (DType t : {x.dtype(), x.dtype(), DType::I64, DType::I64}) region_args.push_back(ir::Type{t, {}});
  std::vector<Value> r = b.op_with_region(
      "stablehlo.sort", {x, idx}, {x.type, idx.type},
      "dimension = " + std::to_string(dim) + " : i64, is_stable = true", region_args, less);
  return {r[0], r[1]};
}

std::vector<Value> sort_impl(Ctx& c, int64_t dim_arg, bool descending) {
  Value x = c.tensor(0);
  int64_t dim = hlo::wrap_dim(dim_arg, x.rank());
  if (x.rank() == 0) x = hlo::reshape(c.b, x, {1});
  auto [v, i] = sort_with_indices(c.b, x, dim, descending);
  return {hlo::reshape(c.b, v, c.out(0).shape), hlo::reshape(c.b, i, c.out(1).shape)};
}

// sort.stable(self, *, stable?, dim, descending)
std::vector<Value> lower_sort_stable(Ctx& c) { return sort_impl(c, c.int_arg(2), c.bool_arg(3)); }
// sort(self, dim, descending)
std::vector<Value> lower_sort(Ctx& c) { return sort_impl(c, c.int_arg(1), c.bool_arg(2)); }

// topk(self, k, dim, largest, sorted): the first k of a full sort (sorted order is a valid
// answer for sorted=False).
std::vector<Value> lower_topk(Ctx& c) {
  Value x = c.tensor(0);
  int64_t k = c.int_arg(1);
  int64_t dim = hlo::wrap_dim(c.int_arg(2), x.rank());
  if (x.rank() == 0) x = hlo::reshape(c.b, x, {1});
  auto [v, i] = sort_with_indices(c.b, x, dim, c.bool_arg(3));
  v = hlo::slice_dim(c.b, v, dim, 0, k);
  i = hlo::slice_dim(c.b, i, dim, 0, k);
  return {hlo::reshape(c.b, v, c.out(0).shape), hlo::reshape(c.b, i, c.out(1).shape)};
}

}  // namespace

TPU_LOWERING("aten::sort.stable", lower_sort_stable);
TPU_LOWERING("aten::sort", lower_sort);
TPU_LOWERING("aten::topk", lower_topk);

}  // namespace tpu::lowering
