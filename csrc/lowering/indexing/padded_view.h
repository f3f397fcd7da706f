// Views in programs with dynamic dimensions (docs/dynamic_shapes.md).
//
// A storage whose tensor has a dynamic dimension is kept *padded*: its buffer is a dense array of
// bounds (the buckets), and the storage's elements, in PyTorch's row-major order over the real
// sizes, fill the leading part of each dimension. A view of it (a transpose, a slice, heads split
// off the hidden dimension) is then read with slices of that array, the varying positions (a
// slice at the last position, the real sizes) being runtime values. A view that cannot be laid on
// the array that way (a dynamic dimension merged with an outer one) is read element by element
// with a gather. A flat storage is the case of one static dimension.
#pragma once
#include <optional>
#include <string>
#include <vector>

#include "ir/builder.h"
#include "lowering/core/dynamic.h"
#include "lowering/indexing/storage_view.h"

namespace tpu::lowering {

// A storage inside a program: `data` is the padded array (rank 1 for a flat storage) and `dims`
// the runtime size of each of its dynamic dimensions (empty when flat). `sizes` are the real
// sizes of the call being compiled (for a flat storage, its element count).
struct StorageValue {
  ir::Value data;
  Dims dims;
  std::vector<int64_t> sizes;
  bool padded() const { return any_dynamic(dims); }
};

// A view whose sizes, strides or offset may vary between the calls a program serves.
struct DynamicView {
  ViewGeometry geometry;           // the numbers of the call being compiled
  std::vector<int64_t> bounds;     // per dimension: its size, or its bucket where dynamic
  Dims sizes;                      // per dimension: runtime size where dynamic
  std::vector<ir::Value> strides;  // per dimension: runtime stride where it varies
  ir::Value offset;                // runtime offset when it varies
  bool varies() const;
  std::vector<bool> varying_dims() const;  // per dimension: its size or stride is a runtime value
};

// How a view lies on a padded storage: the storage's static dimensions are split where the
// view's strides fall inside them; each view dimension then walks one run of consecutive split
// dimensions (one, with a step, or several whose inner ones it covers whole); the others stay at
// the coordinate the offset gives. Computed from the numbers of one call; `key()` is its
// structure, which every call sharing a program must have.
struct ViewPlan {
  std::vector<int64_t> sizes;  // refined storage dimensions
  std::vector<int> from;       // storage dimension of each refined one
  std::vector<bool> dynamic;   // refined dimension is a whole dynamic storage dimension
  struct Run {
    int first = -1, last = -1;  // refined dimensions walked; -1 for size-1 and broadcast dims
    int64_t step = 1;
  };
  std::vector<Run> runs;  // per view dimension
  std::string key() const;
};
// Null when the view is not a box of the storage (then it is read with a gather).
std::optional<ViewPlan> plan_view(const ViewGeometry& view, const std::vector<int64_t>& storage_sizes,
                                  const std::vector<bool>& storage_dynamic);

// For a view that is not a box (plan_view is null): how many of its trailing dimensions lie whole
// and contiguous on the storage's static trailing dimensions (the hidden size of [B, L, D] read
// as [B·L, D]) with every stride and the offset of the call a multiple of that row; `varies`:
// per view dimension, whether its size or stride is a runtime value (never in a row). Those move
// as rows of a gather or scatter, the others element by element; 0: element by element
// throughout. Part of the program's key.
int row_dims(const ViewGeometry& view, const std::vector<bool>& varies,
             const std::vector<int64_t>& storage_sizes, const std::vector<bool>& storage_dynamic);

// The view's value, of shape view.bounds (padding unspecified).
ir::Value read_dynamic(ir::Builder& b, const StorageValue& storage, const DynamicView& view);
// The storage after writing `value` (of shape view.bounds) through the view: only the view's
// real elements change.
StorageValue write_dynamic(ir::Builder& b, const StorageValue& storage, const ir::Value& value,
                           const DynamicView& view);
// A fresh result as a storage laid out with `strides` (dense): padded in stride order when it has
// dynamic dimensions, else flat. `sizes` are its real sizes in the call being compiled.
StorageValue result_storage(ir::Builder& b, const ir::Value& value, const Dims& dims,
                            const std::vector<int64_t>& sizes, const std::vector<int64_t>& strides);

}  // namespace tpu::lowering
