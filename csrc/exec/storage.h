// The device side of one PyTorch storage: its byte size and the buffer currently holding it.
// The buffer is replaced (never mutated) by writes, so every tensor sharing the storage sees them.
#pragma once
#include <cstdint>

#include "ir/dtype.h"
#include "runtime/buffer.h"

namespace tpu::exec {

struct Storage {
  int64_t nbytes = 0;
  int device = 0;
  // Null until first written; reads of a never-written storage see zeros.
  runtime::BufferPtr buffer;
  ir::DType dtype = ir::DType::F32;  // element type of `buffer` (valid when buffer is set)

  // Number of elements when viewed as `dtype`.
  int64_t numel_as(ir::DType t) const { return nbytes / ir::itemsize(t); }
};

}  // namespace tpu::exec
