// Shared steps of reduction lowerings (sum, max, var, softmax, norms, losses): which dimensions
// to reduce, the accumulation dtype, and reductions with PyTorch's init values and NaN rules.
#pragma once
#include <vector>

#include "lowering/core/hlo.h"
#include "lowering/core/kit.h"
#include "lowering/core/registry.h"

namespace tpu::lowering::reduce {

using ir::Builder;
using ir::DType;
using ir::Shape;
using ir::Value;

// Normalised, sorted, de-duplicated dimensions. An empty list means every dimension, as
// PyTorch's `dim=[]` / `dim=None` do for sum, mean, amax, ...
std::vector<int64_t> dims_or_all(const std::vector<int64_t>& dims, int rank);
// Argument `name` as a dimension list (IntList, Int or None) with dims_or_all applied.
std::vector<int64_t> dims_arg(const Ctx& c, std::string_view name, int rank);
// Product of the sizes of `dims` of `shape`.
int64_t count(const Shape& shape, const std::vector<int64_t>& dims);
// `shape` with `dims` removed.
Shape reduced_shape(const Shape& shape, const std::vector<int64_t>& dims);
// `shape` with `dims` set to 1 (the keepdim shape).
Shape kept_shape(const Shape& shape, const std::vector<int64_t>& dims);
// Broadcast shape of two shapes (NumPy rules).
Shape broadcast_shapes(const Shape& a, const Shape& b);

// Reductions of `dims` of x in x's dtype (the result drops the dims; a no-op for no dims).
Value sum(Builder& b, const Value& x, const std::vector<int64_t>& dims);
Value prod(Builder& b, const Value& x, const std::vector<int64_t>& dims);
// Inclusive running sum along `dim` in log2(n) shift-and-add steps (the helpers' prefix sums:
// counts for indexing and embedding bags, the CDF of multinomial).
Value running_sum(Builder& b, const Value& x, int64_t dim);
// max/min that propagate NaN (as torch.amax does); bool reduces with or/and.
Value max(Builder& b, const Value& x, const std::vector<int64_t>& dims);
Value min(Builder& b, const Value& x, const std::vector<int64_t>& dims);
// Smallest / largest value of a dtype (-inf / +inf for floats), the init of max / min.
Value lowest(Builder& b, DType t);
Value highest(Builder& b, DType t);

// (value, index) of the max (or min) along one dimension, the index of the first occurrence
// on ties and of the first NaN when there is one, as PyTorch's CPU kernels return them.
// The result drops `dim`; indices are int64.
std::pair<Value, Value> arg_reduce(Builder& b, const Value& x, int64_t dim, bool is_max);

// x != x for floats, false otherwise.
Value isnan(Builder& b, const Value& x);
// The result dims of a reduction broadcast back to x's shape (the reduced dims re-inserted).
Value expand_back(Builder& b, const Value& r, const Shape& shape, const std::vector<int64_t>& dims);

}  // namespace tpu::lowering::reduce
