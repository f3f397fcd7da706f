#include "runtime/buffer.h"

#include <algorithm>
#include <atomic>

#include "runtime/pjrt_error.h"

namespace tpu::runtime {

namespace {
std::atomic<int64_t> g_allocated{0}, g_peak{0}, g_allocs{0}, g_frees{0};
}

MemoryStats memory_stats() { return {g_allocated.load(), g_peak.load(), g_allocs.load(), g_frees.load()}; }

void reset_peak_memory() { g_peak.store(g_allocated.load()); }

Buffer::Buffer(const PJRT_Api* api, PJRT_Buffer* buffer) : api_(api), buffer_(buffer) {
  TPU_PJRT_ARGS(PJRT_Buffer_OnDeviceSizeInBytes_Args, args);
  args.buffer = buffer_;
  if (api_->PJRT_Buffer_OnDeviceSizeInBytes(&args) == nullptr) bytes_ = args.on_device_size_in_bytes;
  int64_t now = (g_allocated += bytes_);
  int64_t peak = g_peak.load();
  while (now > peak && !g_peak.compare_exchange_weak(peak, now)) {}
  ++g_allocs;
}

Buffer::~Buffer() {
  g_allocated -= bytes_;
  ++g_frees;
  TPU_PJRT_ARGS(PJRT_Buffer_Destroy_Args, args);
  args.buffer = buffer_;
  api_->PJRT_Buffer_Destroy(&args);
}

std::vector<int64_t> Buffer::dims() const {
  TPU_PJRT_ARGS(PJRT_Buffer_Dimensions_Args, args);
  args.buffer = buffer_;
  check(api_, api_->PJRT_Buffer_Dimensions(&args), "PJRT_Buffer_Dimensions");
  return std::vector<int64_t>(args.dims, args.dims + args.num_dims);
}

PJRT_Buffer_Type Buffer::element_type() const {
  TPU_PJRT_ARGS(PJRT_Buffer_ElementType_Args, args);
  args.buffer = buffer_;
  check(api_, api_->PJRT_Buffer_ElementType(&args), "PJRT_Buffer_ElementType");
  return args.type;
}

void Buffer::to_host(void* dst, size_t dst_size) const {
  TPU_PJRT_ARGS(PJRT_Buffer_ToHostBuffer_Args, args);
  args.src = buffer_;
  args.dst = dst;
  args.dst_size = dst_size;
  check(api_, api_->PJRT_Buffer_ToHostBuffer(&args), "PJRT_Buffer_ToHostBuffer");
  Event(api_, args.event).await();
}

Event Buffer::ready_event() const {
  TPU_PJRT_ARGS(PJRT_Buffer_ReadyEvent_Args, args);
  args.buffer = buffer_;
  check(api_, api_->PJRT_Buffer_ReadyEvent(&args), "PJRT_Buffer_ReadyEvent");
  return Event(api_, args.event);
}

void Buffer::await_ready() const { ready_event().await(); }

bool Buffer::is_deleted() const {
  TPU_PJRT_ARGS(PJRT_Buffer_IsDeleted_Args, args);
  args.buffer = buffer_;
  check(api_, api_->PJRT_Buffer_IsDeleted(&args), "PJRT_Buffer_IsDeleted");
  return args.is_deleted;
}

}  // namespace tpu::runtime
