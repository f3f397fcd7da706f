// RAII handle on a device buffer, with process-wide accounting of live device bytes.
#pragma once
#include <cstdint>
#include <memory>
#include <vector>

#include "pjrt_c_api.h"
#include "runtime/event.h"

namespace tpu::runtime {

struct MemoryStats {
  int64_t allocated_bytes = 0;
  int64_t peak_bytes = 0;
  int64_t num_allocs = 0;
  int64_t num_frees = 0;
};
MemoryStats memory_stats();
void reset_peak_memory();

class Buffer {
 public:
  Buffer(const PJRT_Api* api, PJRT_Buffer* buffer);
  Buffer(const Buffer&) = delete;
  Buffer& operator=(const Buffer&) = delete;
  ~Buffer();

  PJRT_Buffer* raw() const { return buffer_; }
  int64_t size_in_bytes() const { return bytes_; }
  std::vector<int64_t> dims() const;
  PJRT_Buffer_Type element_type() const;
  // Copies the whole buffer into `dst` (dense, major-to-minor) and waits for it.
  void to_host(void* dst, size_t dst_size) const;
  // Blocks until the buffer's defining computation has finished; rethrows its error.
  void await_ready() const;
  // Fires when the defining computation finishes; stays usable after the buffer is donated.
  Event ready_event() const;
  // True once the buffer was donated to a program (or deleted): its data is gone.
  bool is_deleted() const;

 private:
  const PJRT_Api* api_;
  PJRT_Buffer* buffer_;
  int64_t bytes_ = 0;
};

using BufferPtr = std::shared_ptr<Buffer>;

}  // namespace tpu::runtime
