// Ops whose output size depends on data (dynamic_shape_kernels.cpp): the pieces the generic
// kernel uses for indexing with boolean masks.
#pragma once
#include <ATen/core/List.h>
#include <ATen/core/Tensor.h>

#include <optional>

namespace tpu::aten {

// Boolean (or uint8) masks in an index list become the long indices of their true elements.
c10::List<std::optional<at::Tensor>> expand_masks(const c10::List<std::optional<at::Tensor>>& indices);
// Whether an index list holds a boolean (or uint8) mask.
bool has_mask(const c10::List<std::optional<at::Tensor>>& indices);

}  // namespace tpu::aten
