// Sorting along one dimension, shared by the sort family and unique.
#pragma once
#include <utility>

#include "ir/builder.h"

namespace tpu::lowering {

// (values, int64 indices) of x sorted stably along dim; NaN orders above every number (last
// ascending, first descending), as in PyTorch's CPU kernels.
std::pair<ir::Value, ir::Value> sort_with_indices(ir::Builder& b, const ir::Value& x, int64_t dim,
                                                  bool descending);

}  // namespace tpu::lowering
