// Reading and writing a strided view of a storage. A storage is one flat array (rank 1); PyTorch
// keeps sizes/strides/offset, so views cost nothing until an op reads or writes through them.
// Common layouts (contiguous ranges, transposes, stepped slices) become slice/reshape/transpose;
// anything else (overlapping as_strided windows) becomes a gather or scatter.
#pragma once
#include <vector>

#include "ir/builder.h"

namespace tpu::lowering {

struct ViewGeometry {
  std::vector<int64_t> sizes;
  std::vector<int64_t> strides;
  int64_t offset = 0;
};

bool is_contiguous(const ViewGeometry& v);
// True when the view is the whole storage, contiguous: reading is a reshape, writing replaces.
bool covers_storage(const ViewGeometry& v, int64_t storage_numel);
// As covers_storage, in any dense order (a transposed clone's result): written whole, the
// storage is laid out afresh in that order.
bool covers_storage_densely(const ViewGeometry& v, int64_t storage_numel);

ir::Value read_view(ir::Builder& b, const ir::Value& storage, const ViewGeometry& view);
// Returns the new storage with `value` (already of the storage dtype and the view's shape)
// written through the view.
ir::Value write_view(ir::Builder& b, const ir::Value& storage, const ir::Value& value,
                     const ViewGeometry& view);
// The flat storage `storage` reinterpreted bit for bit as `dtype` (the byte size is kept).
ir::Value reinterpret(ir::Builder& b, const ir::Value& storage, ir::DType dtype);
// Lays out a fresh result with the given dense strides into a flat storage.
ir::Value to_storage(ir::Builder& b, const ir::Value& value, const std::vector<int64_t>& strides);
// Dimensions ordered by decreasing stride when the strides are a dense permutation of `sizes`
// (no gaps, no overlap); empty when they are not.
std::vector<int64_t> dense_permutation(const std::vector<int64_t>& sizes,
                                       const std::vector<int64_t>& strides);

}  // namespace tpu::lowering
