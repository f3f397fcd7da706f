// Device allocation failures as torch.OutOfMemoryError (c10::OutOfMemoryError), the exception
// CUDA code catches, with the sizes torch.cuda's message gives.
#pragma once
#include <c10/core/Device.h>

#include <cstdint>

#include "runtime/pjrt_error.h"

namespace tpu::aten {

[[noreturn]] void raise_out_of_memory(const runtime::OutOfMemory& e);
// Out-of-memory errors raised so far (memory_stats()["num_ooms"]).
int64_t out_of_memory_count();

// Runs `f`, turning a runtime::OutOfMemory from the layers below into torch.OutOfMemoryError.
// Used where execution enters from PyTorch: op kernels, copies, syncs.
template <class F>
decltype(auto) translating_out_of_memory(F&& f) {
  try {
    return f();
  } catch (const runtime::OutOfMemory& e) {
    raise_out_of_memory(e);
  }
}

}  // namespace tpu::aten
