#include "lowering/core/index_util.h"

namespace tpu::lowering::idx {

Value wrap_index(Builder& b, const Value& index, int64_t size) {
  Value i = hlo::convert(b, index, DType::I64);
  Value zero = hlo::full(b, i.type, 0);
  Value wrapped = hlo::add(b, i, hlo::full(b, i.type, static_cast<double>(size)));
  return hlo::select(b, hlo::compare(b, i, zero, "LT"), wrapped, i);
}

Value element_coords(Builder& b, const Value& index, int64_t dim, int64_t dim_size) {
  const int64_t r = index.rank();
  Shape one = index.shape();
  one.push_back(1);
  Type coord_type{DType::I64, one};
  std::vector<Value> parts;
  for (int64_t d = 0; d < r; ++d) {
    if (d == dim) {
      parts.push_back(hlo::reshape(b, wrap_index(b, index, dim_size), one));
    } else {
      parts.push_back(hlo::iota(b, coord_type, d));
    }
  }
  return hlo::concatenate(b, parts, r);
}

Value at_least_1d(Builder& b, const Value& v) { return v.rank() == 0 ? hlo::reshape(b, v, {1}) : v; }

Value gather_along(Builder& b, const Value& operand, int64_t dim, const Value& index) {
  GatherDims d;
  for (int64_t i = 0; i < operand.rank(); ++i)
    if (i != dim) d.offset_dims.push_back(i);
  d.collapsed_slice_dims = {dim};
  d.start_index_map = {dim};
  d.index_vector_dim = 1;
  d.slice_sizes = operand.shape();
  d.slice_sizes[dim] = 1;
  return gather(b, operand, hlo::reshape(b, index, {index.shape()[0], 1}), d);
}

Value scatter_along(Builder& b, const Value& operand, int64_t dim, const Value& index, const Value& updates,
                    ScatterCombiner combine) {
  // Indices [N, 1]; the update dimension `dim` walks the indices, every other is a window.
  Value ind = hlo::reshape(b, wrap_index(b, index, operand.shape()[dim]), {updates.shape()[dim], 1});
  ScatterDims d;
  for (int i = 0; i < updates.rank(); ++i)
    if (i != dim) d.update_window_dims.push_back(i);
  d.inserted_window_dims = {dim};
  d.scatter_dims_to_operand_dims = {dim};
  d.index_vector_dim = 1;
  return scatter(b, operand, ind, updates, d, combine);
}

namespace {

std::vector<int64_t> range(int64_t n) {
  std::vector<int64_t> v;
  for (int64_t i = 0; i < n; ++i) v.push_back(i);
  return v;
}

}  // namespace

Value gather_elements(Builder& b, const Value& self, const Value& index, int64_t dim) {
  const int64_t r = self.rank();
  Value coords = element_coords(b, index, dim, self.shape()[dim]);
  GatherDims d;
  d.collapsed_slice_dims = range(r);
  d.start_index_map = range(r);
  d.index_vector_dim = r;
  d.slice_sizes = std::vector<int64_t>(r, 1);
  return gather(b, self, coords, d);
}

Value scatter_elements(Builder& b, const Value& self, const Value& index, int64_t dim, const Value& updates,
                       ScatterCombiner combine) {
  if (index.type.numel() == 0) return self;
  const int64_t r = self.rank();
  Value coords = element_coords(b, index, dim, self.shape()[dim]);
  ScatterDims d;
  d.inserted_window_dims = range(r);
  d.scatter_dims_to_operand_dims = range(r);
  d.index_vector_dim = r;
  return scatter(b, self, coords, updates, d, combine);
}

void require_in_range(Ctx& c, const Value& index, int64_t size, bool allow_negative,
                      const std::string& message, CheckError kind) {
  if (index.type.numel() == 0) return;
  Value i = hlo::convert(c.b, index, DType::I64);
  Value lo = hlo::full(c.b, i.type, allow_negative ? -static_cast<double>(size) : 0.0);
  Value hi = hlo::full(c.b, i.type, static_cast<double>(size));
  Value ok = hlo::and_(c.b, hlo::compare(c.b, i, lo, "GE"), hlo::compare(c.b, i, hi, "LT"));
  std::vector<int64_t> dims;
  for (int d = 0; d < ok.rank(); ++d) dims.push_back(d);
  if (!dims.empty())
    ok = hlo::reduce(c.b, ok, hlo::constant_int(c.b, DType::Bool, 1), dims, hlo::Combiner::And);
  c.require(ok, message, kind);
}

std::string out_of_bounds(int64_t dim, int64_t size) {
  return "index is out of bounds for dimension " + std::to_string(dim) + " with size " + std::to_string(size);
}

hlo::Combiner add_op(DType dtype) { return dtype == DType::Bool ? hlo::Combiner::Or : hlo::Combiner::Add; }
hlo::Combiner mul_op(DType dtype) { return dtype == DType::Bool ? hlo::Combiner::And : hlo::Combiner::Mul; }

// Sorting flat indices with the false elements pushed past the end keeps row-major order.
Value nonzero_coords(Builder& b, const Value& mask, int64_t count, int64_t fill) {
  const Shape shape = mask.shape();
  const int64_t n = mask.type.numel(), rank = mask.rank();
  if (rank == 0) return hlo::full(b, Type{DType::I64, {count, 0}}, 0);
  Type flat{DType::I64, {n}};
  Value iota = hlo::iota(b, flat, 0);
  Value keyed =
      hlo::select(b, hlo::reshape(b, mask, {n}), iota, hlo::add(b, iota, hlo::full(b, flat, double(n))));
  if (count > n)
    keyed = hlo::concatenate(b, {keyed, hlo::full(b, Type{DType::I64, {count - n}}, double(2 * n))}, 0);
  Value sorted = hlo::sort(b, {keyed}, 0, /*stable=*/false,
                           [](Builder& rb, const std::vector<Value>& a) -> std::vector<Value> {
                             return {hlo::compare(rb, a[0], a[1], "LT")};
                           })[0];
  Type t{DType::I64, {count}};
  Value flat_idx = hlo::slice(b, sorted, {0}, {count});
  Value missing = hlo::compare(b, flat_idx, hlo::full(b, t, double(n)), "GE");
  std::vector<int64_t> strides(rank, 1);
  for (int64_t d = rank - 2; d >= 0; --d) strides[d] = strides[d + 1] * shape[d + 1];
  std::vector<Value> cols;
  for (int64_t d = 0; d < rank; ++d) {
    Value q = hlo::div(b, flat_idx, hlo::full(b, t, double(strides[d])));
    Value r = hlo::rem(b, q, hlo::full(b, t, double(shape[d])));
    r = hlo::select(b, missing, hlo::full(b, t, double(fill)), r);
    cols.push_back(hlo::reshape(b, r, {count, 1}));
  }
  return hlo::concatenate(b, cols, 1);
}

}  // namespace tpu::lowering::idx
