// Sorting along one dimension, shared by the sort family and unique.
#pragma once
#include <utility>

#include "ir/builder.h"

namespace tpu::lowering {

// (values, int64 indices) of x sorted stably along dim; NaN orders above every number (last
// ascending, first descending), as in PyTorch's CPU kernels. With `real` (i1 of x's shape, false
// on padding: lowering/core/dynamic.h), the real elements come first, in the order of the
// unpadded sort.
std::pair<ir::Value, ir::Value> sort_with_indices(ir::Builder& b, const ir::Value& x, int64_t dim,
                                                  bool descending, const ir::Value& real = {});

}  // namespace tpu::lowering
