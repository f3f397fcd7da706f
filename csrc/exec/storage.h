// The device side of one PyTorch storage: its byte size and the buffer currently holding it.
// The buffer is replaced (never mutated) by writes, so every tensor sharing the storage sees them.
// In fused mode the latest value may still be pending: produced by a recorded, not yet executed
// node. The pending value is owned here only, so "no storage holds it" means "nobody can read it".
#pragma once
#include <cstdint>
#include <functional>
#include <memory>
#include <vector>

#include "ir/dtype.h"
#include "runtime/buffer.h"

namespace tpu::exec {

// A padded storage (docs/dynamic_shapes.md): its buffer is a dense array of `bounds`, and the
// storage's elements, row-major over `sizes`, fill its leading part. A `dynamic` dimension's real
// size is given to programs at run time, so every size up to its bound shares their programs.
struct PaddedForm {
  std::vector<int64_t> bounds, sizes;
  std::vector<bool> dynamic;
  int64_t capacity() const {
    int64_t n = 1;
    for (int64_t b : bounds) n *= b;
    return n;
  }
};
using PaddedFormPtr = std::shared_ptr<const PaddedForm>;

// The host tensor a storage was last uploaded from, while it still holds those values: a storage
// whose sizes turn out to vary is padded from it (one more upload, no program).
struct HostCopy {
  std::vector<int64_t> sizes;  // of the uploaded (dense) tensor
  std::vector<bool> varied;    // its dimensions whose size has varied between uploads at its line
  const void* data = nullptr;
  std::shared_ptr<void> owner;      // keeps `data` alive
  std::function<bool()> unchanged;  // false once the host tensor was written
};

struct PendingValue {
  uint64_t graph_id = 0;       // the fused graph that will produce it
  int node = -1, output = -1;  // its producer inside that graph
  runtime::BufferPtr buffer;   // set once the graph has run
  // The buffer its storage held when the graph started, when this value has the same type:
  // the program may write this value into it (donation). Identity only, never dereferenced.
  const runtime::Buffer* donor = nullptr;
  PaddedFormPtr padded;  // the layout of `buffer` (null: flat)
};

struct Storage {
  int64_t nbytes = 0;
  int device = 0;
  bool defined = false;  // written at least once; reads of an undefined storage see zeros
  runtime::BufferPtr buffer;
  std::shared_ptr<PendingValue> pending;
  ir::DType dtype = ir::DType::F32;           // element type of the current value (when defined)
  PaddedFormPtr padded;                       // the buffer's layout: null when flat
  std::shared_ptr<const HostCopy> host_copy;  // set by an upload, dropped by any other write

  int64_t numel_as(ir::DType t) const { return nbytes / ir::itemsize(t); }
  // Adopts the buffer of a pending value whose graph has run.
  void resolve() {
    if (pending && pending->buffer) {
      buffer = pending->buffer;
      padded = pending->padded;
      host_copy.reset();
      pending.reset();
    }
  }
  void set_buffer(runtime::BufferPtr b, ir::DType t, PaddedFormPtr form = nullptr) {
    buffer = std::move(b);
    pending.reset();
    dtype = t;
    defined = true;
    padded = std::move(form);
    host_copy.reset();
  }
};

}  // namespace tpu::exec
