// The PrivateUse1 allocator. A tpu storage's DataPtr carries an exec::Storage as its context;
// the device buffer appears when the storage is first written. The data pointer itself is a
// unique, never-dereferenced address so that PyTorch's identity and overlap checks work.
#include <c10/core/CachingDeviceAllocator.h>

#include <atomic>

#include "aten/tpu_tensor.h"
#include "exec/device_context.h"

namespace tpu::aten {

namespace {

void delete_storage(void* ctx) { delete static_cast<exec::Storage*>(ctx); }

// Fake addresses in a range no host allocation uses; each allocation gets its own span.
std::atomic<uint64_t> g_next_address{uint64_t{1} << 46};

class TpuAllocator final : public c10::DeviceAllocator {
 public:
  c10::DataPtr allocate(size_t nbytes) override {
    auto* storage = new exec::Storage();
    storage->nbytes = static_cast<int64_t>(nbytes);
    storage->device = current_device();
    uint64_t span = (static_cast<uint64_t>(nbytes) + 511) & ~uint64_t{255};
    void* address = reinterpret_cast<void*>(g_next_address.fetch_add(span));
    return {address, storage, &delete_storage, c10::Device(c10::DeviceType::PrivateUse1, storage->device)};
  }

  c10::DeleterFnPtr raw_deleter() const override { return nullptr; }

  void copy_data(void*, const void*, std::size_t) const override {
    TORCH_CHECK(false, "torch_tpu: tpu storages cannot be copied through raw pointers");
  }

  bool initialized() override { return exec::runtime_initialized(); }
  void emptyCache(c10::MempoolId_t) override {}
  void recordStream(const c10::DataPtr&, c10::Stream) override {}

  c10::CachingDeviceAllocator::DeviceStats getDeviceStats(c10::DeviceIndex) override {
    runtime::MemoryStats m = runtime::memory_stats();
    c10::CachingDeviceAllocator::DeviceStats stats;
    for (auto* arr :
         {&stats.allocated_bytes, &stats.reserved_bytes, &stats.active_bytes, &stats.requested_bytes}) {
      auto& s = (*arr)[static_cast<size_t>(c10::CachingAllocator::StatType::AGGREGATE)];
      s.current = m.allocated_bytes;
      s.peak = m.peak_bytes;
    }
    auto& count = stats.allocation[static_cast<size_t>(c10::CachingAllocator::StatType::AGGREGATE)];
    count.current = m.num_allocs - m.num_frees;
    count.allocated = m.num_allocs;
    count.freed = m.num_frees;
    return stats;
  }

  void resetAccumulatedStats(c10::DeviceIndex) override {}
  void resetPeakStats(c10::DeviceIndex) override { runtime::reset_peak_memory(); }

  std::pair<size_t, size_t> getMemoryInfo(c10::DeviceIndex) override {
    // XLA:CPU buffers live in host memory: report the host's free and total memory.
    long pages = sysconf(_SC_PHYS_PAGES), avail = sysconf(_SC_AVPHYS_PAGES), size = sysconf(_SC_PAGE_SIZE);
    return {static_cast<size_t>(avail) * size, static_cast<size_t>(pages) * size};
  }
};

TpuAllocator g_allocator;

}  // namespace

c10::Allocator* tpu_allocator() { return &g_allocator; }

REGISTER_ALLOCATOR(c10::DeviceType::PrivateUse1, &g_allocator);

}  // namespace tpu::aten
