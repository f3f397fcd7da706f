// Pinned host memory. PJRT on XLA:CPU reads and writes host buffers directly, so page-locking
// buys no transfer speed; what matters is torch's contract: a tensor from pin_memory() reports
// is_pinned(), and code relies on it (DDP's reducer asserts it on the pinned staging copy of its
// used-parameter map when find_unused_parameters=True; DataLoader's pin_memory thread and
// pin_memory() itself skip tensors that are already pinned). The memory comes from the CPU
// allocator; each allocation is recorded by its address range so that any pointer into it
// (a view's storage offset included) answers as pinned until it is freed.
//
// It is also the device's host allocator for torch.accelerator (empty_host_cache,
// host_memory_stats): without one registered, torch.accelerator.empty_host_cache() dereferenced
// a null allocator once the device was initialized (vLLM calls it at shutdown). Nothing is
// cached: freed blocks go back to the CPU allocator at once, so emptying the cache has nothing
// to release and no stream use needs recording.
#include "aten/pinned_memory.h"

#include <ATen/core/CachingHostAllocator.h>
#include <c10/core/impl/alloc_cpu.h>

#include <map>
#include <mutex>

namespace tpu::aten {

namespace {

class PinnedHostAllocator final : public at::HostAllocator {
 public:
  c10::DataPtr allocate(size_t nbytes) override {
    // At least one byte, so that an empty pinned tensor also owns a recorded (pinned) address,
    // as with CUDA's host allocator.
    void* data = c10::alloc_cpu(nbytes == 0 ? 1 : nbytes);
    {
      std::lock_guard<std::mutex> lock(mutex_);
      blocks_[reinterpret_cast<uintptr_t>(data)] = nbytes == 0 ? 1 : nbytes;
    }
    return {data, data, &Delete, c10::Device(c10::kCPU)};
  }

  c10::DeleterFnPtr raw_deleter() const override { return &Delete; }

  void copy_data(void* dest, const void* src, std::size_t count) const override {
    default_copy_data(dest, src, count);
  }

  bool record_event(void* /*ptr*/, void* /*ctx*/, c10::Stream /*stream*/) override { return false; }
  void empty_cache() override {}
  at::HostStats get_stats() override { return {}; }
  void reset_accumulated_stats() override {}
  void reset_peak_stats() override {}

  bool contains(const void* ptr) {
    auto address = reinterpret_cast<uintptr_t>(ptr);
    std::lock_guard<std::mutex> lock(mutex_);
    auto it = blocks_.upper_bound(address);  // the first block starting after `ptr`
    if (it == blocks_.begin()) return false;
    --it;
    return address < it->first + it->second;
  }

 private:
  static void Delete(void* data);

  std::mutex mutex_;
  std::map<uintptr_t, size_t> blocks_;  // start address -> size of the live allocations
};

PinnedHostAllocator& instance() {
  // Never destroyed: pinned tensors may outlive static destruction at exit.
  static auto* allocator = new PinnedHostAllocator();
  return *allocator;
}

void PinnedHostAllocator::Delete(void* data) {
  {
    auto& self = instance();
    std::lock_guard<std::mutex> lock(self.mutex_);
    self.blocks_.erase(reinterpret_cast<uintptr_t>(data));
  }
  c10::free_cpu(data);
}

}  // namespace

c10::Allocator* pinned_host_allocator() { return &instance(); }

REGISTER_HOST_ALLOCATOR(at::kPrivateUse1, &instance())

bool is_pinned_host_ptr(const void* ptr) { return ptr != nullptr && instance().contains(ptr); }

}  // namespace tpu::aten
