// Pinned ("page-locked") host memory for tensor.pin_memory() and pin_memory=True with tpu as the
// accelerator.
#pragma once

#include <c10/core/Allocator.h>

namespace tpu::aten {

// The allocator torch uses for pinned CPU tensors (PrivateUse1 hooks' getPinnedMemoryAllocator).
c10::Allocator* pinned_host_allocator();

// Whether `ptr` points into a live allocation of pinned_host_allocator() (hooks' isPinnedPtr).
bool is_pinned_host_ptr(const void* ptr);

}  // namespace tpu::aten
