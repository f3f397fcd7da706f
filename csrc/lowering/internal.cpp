// Lowerings the glue itself uses (copies between views and dtypes, nonzero in two steps); not
// ATen ops, except nonzero_static, which is nonzero with a static size.
#include "lowering/hlo.h"
#include "lowering/registry.h"

namespace tpu::lowering {

namespace {

// Input (already read through its view) converted and broadcast to the single result type.
std::vector<ir::Value> lower_copy(Ctx& c) {
  ir::Value v = hlo::convert(c.b, c.tensor(0), c.out().dtype);
  return {hlo::broadcast_to(c.b, v, c.out().shape)};
}

}  // namespace

TPU_LOWERING("torch_tpu::view_copy", lower_copy);

}  // namespace tpu::lowering

namespace tpu::lowering {

namespace {

using ir::DType;
using ir::Value;

Value nonzero_mask(Ctx& c) {
  Value x = c.tensor(0);
  return hlo::compare(c.b, x, hlo::full(c.b, x.type, 0), "NE");
}

// Number of non-zero elements, as a 0-d int64 (read on the host to size nonzero's result).
std::vector<Value> lower_count_nonzero(Ctx& c) {
  Value m = hlo::convert(c.b, nonzero_mask(c), DType::I64);
  std::vector<int64_t> dims(m.rank());
  for (int i = 0; i < m.rank(); ++i) dims[i] = i;
  return {hlo::reduce(c.b, m, hlo::constant_int(c.b, DType::I64, 0), dims, "stablehlo.add")};
}

// Coordinates of the first `count` non-zero elements in row-major order. Sorting flat indices
// with the zero elements pushed past the end keeps order; rows past the number of non-zero
// elements (nonzero_static with a larger size) hold `fill`.
Value nonzero_coords(Ctx& c, int64_t count, int64_t fill) {
  Value x = c.tensor(0);
  int64_t n = x.type.numel(), rank = x.rank();
  ir::Type flat{DType::I64, {n}};
  Value mask = hlo::reshape(c.b, nonzero_mask(c), {n});
  Value iota = hlo::iota(c.b, flat, 0);
  Value keyed = hlo::select(c.b, mask, iota, hlo::add(c.b, iota, hlo::full(c.b, flat, double(n))));
  if (count > n) keyed = hlo::concatenate(c.b, {keyed, hlo::full(c.b, ir::Type{DType::I64, {count - n}}, double(2 * n))}, 0);
  ir::Type keys = keyed.type;
  Value sorted = c.b.op_with_region(
      "stablehlo.sort", {keyed}, {keys}, "dimension = 0 : i64, is_stable = false",
      {ir::Type{DType::I64, {}}, ir::Type{DType::I64, {}}},
      [](ir::Builder& rb, const std::vector<Value>& a) -> std::vector<Value> {
        return {hlo::compare(rb, a[0], a[1], "LT")};
      })[0];
  ir::Type t{DType::I64, {count}};
  Value idx = hlo::slice(c.b, sorted, {0}, {count});
  Value missing = hlo::compare(c.b, idx, hlo::full(c.b, t, double(n)), "GE");
  std::vector<Value> cols;
  int64_t stride = 1;
  std::vector<int64_t> strides(rank);
  for (int64_t d = rank - 1; d >= 0; --d) {
    strides[d] = stride;
    stride *= x.shape()[d];
  }
  for (int64_t d = 0; d < rank; ++d) {
    Value q = hlo::div(c.b, idx, hlo::full(c.b, t, double(strides[d])));
    Value r = c.b.op1("stablehlo.remainder", {q, hlo::full(c.b, t, double(x.shape()[d]))}, t);
    r = hlo::select(c.b, missing, hlo::full(c.b, t, double(fill)), r);
    cols.push_back(hlo::reshape(c.b, r, {count, 1}));
  }
  if (cols.empty()) return hlo::full(c.b, c.out(), 0);
  return hlo::concatenate(c.b, cols, 1);
}

// The count is the result's first dimension (read on the host first).
std::vector<Value> lower_nonzero(Ctx& c) { return {nonzero_coords(c, c.out().shape[0], 0)}; }

// nonzero_static(self, *, size, fill_value)
std::vector<Value> lower_nonzero_static(Ctx& c) { return {nonzero_coords(c, c.int_arg(1), c.int_arg(2))}; }

}  // namespace

TPU_LOWERING("torch_tpu::count_nonzero", lower_count_nonzero);
TPU_LOWERING("torch_tpu::nonzero", lower_nonzero);
TPU_LOWERING("aten::nonzero_static", lower_nonzero_static);

}  // namespace tpu::lowering
