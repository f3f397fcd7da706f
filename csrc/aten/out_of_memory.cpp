#include "aten/out_of_memory.h"

#include <c10/core/CachingDeviceAllocator.h>
#include <c10/util/Exception.h>

#include <atomic>
#include <cstdio>

#include "aten/tpu_tensor.h"
#include "exec/executor.h"
#include "runtime/buffer.h"

namespace tpu::aten {

namespace {

std::atomic<int64_t> g_count{0};

// torch.cuda's spelling: "20.00 MiB", "512 bytes".
std::string format_size(uint64_t bytes) {
  char text[64];
  if (bytes < 1024) {
    std::snprintf(text, sizeof text, "%llu bytes", static_cast<unsigned long long>(bytes));
  } else {
    const char* units[] = {"KiB", "MiB", "GiB", "TiB"};
    double v = static_cast<double>(bytes) / 1024;
    int u = 0;
    for (; v >= 1024 && u < 3; ++u) v /= 1024;
    std::snprintf(text, sizeof text, "%.2f %s", v, units[u]);
  }
  return text;
}

}  // namespace

void raise_out_of_memory(const runtime::OutOfMemory& e) {
  ++g_count;
  exec::forget_out_of_memory_launches();
  const int device = current_device();
  auto* allocator = static_cast<c10::DeviceAllocator*>(tpu_allocator());
  auto [free, total] = allocator->getMemoryInfo(static_cast<c10::DeviceIndex>(device));
  const runtime::MemoryStats stats = runtime::memory_stats();
  std::string requested = e.requested_bytes() > 0 ? format_size(e.requested_bytes()) : "an unknown size";
  TORCH_CHECK_WITH(OutOfMemoryError, false, "tpu out of memory. Tried to allocate ", requested,
                   ". tpu:", device, " has a total capacity of ", format_size(total), " of which ",
                   format_size(free), " is free. Of the allocated memory ",
                   format_size(stats.allocated_bytes),
                   " is allocated by PyTorch (live tpu tensors; nothing is cached, so freeing tensors "
                   "returns their memory at once). Runtime: ",
                   e.what());
}

int64_t out_of_memory_count() { return g_count.load(); }

}  // namespace tpu::aten
