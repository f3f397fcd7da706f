// Gather/scatter emitters and index preparation shared by the indexing, scatter/gather and
// embedding lowerings.
#pragma once
#include <string>
#include <vector>

#include "lowering/core/hlo.h"
#include "lowering/core/registry.h"

namespace tpu::lowering::idx {

using ir::Builder;
using ir::DType;
using ir::Shape;
using ir::Type;
using ir::Value;

// The gather / scatter emitters themselves (lowering/core/hlo.h), under the names the indexing
// lowerings use. A scatter's combine is hlo::kReplace or an hlo::Combiner.
using hlo::gather;
using hlo::GatherDims;
using hlo::scatter;
using hlo::ScatterCombiner;
using hlo::ScatterDims;

// Index values as i64 with negative entries wrapped by `size` (PyTorch's Python-style indices).
Value wrap_index(Builder& b, const Value& index, int64_t size);

// Full coordinates for element-wise gather/scatter along `dim` (torch.gather/scatter): for an
// index tensor of shape S (rank r), an i64 tensor S + [r] whose entry at position p is p with
// p[dim] replaced by index[p].
Value element_coords(Builder& b, const Value& index, int64_t dim, int64_t dim_size);

// torch.gather / torch.scatter along `dim`: out[p] = self[p with p[dim] = index[p]], and the
// scatter of `updates` (the index's shape) to those positions, combined as in `scatter`.
Value gather_elements(Builder& b, const Value& self, const Value& index, int64_t dim);
Value scatter_elements(Builder& b, const Value& self, const Value& index, int64_t dim, const Value& updates,
                       ScatterCombiner combine);

// `v` reshaped to rank 1 when it is 0-d (gather/scatter along dim 0 of a 0-d tensor).
Value at_least_1d(Builder& b, const Value& v);

// Gather along one dimension (index_select-like): operand with dimension `dim` replaced by the
// entries index[0..n) (rank-1, in range) of it.
Value gather_along(Builder& b, const Value& operand, int64_t dim, const Value& index);

// Scatter along one dimension (index_add/index_copy/index_fill/index_put-like along `dim`):
// rows updates[..., i, ...] (at position `dim`) go to operand[..., index[i], ...].
Value scatter_along(Builder& b, const Value& operand, int64_t dim, const Value& index, const Value& updates,
                    ScatterCombiner combine);

// Adds a runtime check (Ctx::require) that every entry of `index` lies in [0, size), or in
// [-size, size) when negative indices wrap; PyTorch raises `message` otherwise.
void require_in_range(Ctx& c, const Value& index, int64_t size, bool allow_negative,
                      const std::string& message, CheckError kind = CheckError::Index);
// "index is out of bounds for dimension D with size N" (PyTorch's wording, less the value).
std::string out_of_bounds(int64_t dim, int64_t size);

// The combiner of a sum / product over `dtype`: Or / And on booleans, Add / Mul otherwise.
hlo::Combiner add_op(DType dtype);
hlo::Combiner mul_op(DType dtype);

// Coordinates [count, rank] (int64) of the first `count` true elements of `mask`, in row-major
// order (nonzero's result); rows past the number of true elements hold `fill`.
Value nonzero_coords(Builder& b, const Value& mask, int64_t count, int64_t fill);

}  // namespace tpu::lowering::idx
