// RAII handle on a compiled, loaded PJRT executable.
#pragma once
#include <memory>
#include <string>
#include <vector>

#include "pjrt_c_api.h"
#include "runtime/buffer.h"

namespace tpu::runtime {

class Executable {
 public:
  Executable(const PJRT_Api* api, PJRT_LoadedExecutable* exe);
  Executable(const Executable&) = delete;
  Executable& operator=(const Executable&) = delete;
  ~Executable();

  size_t num_outputs() const { return num_outputs_; }
  // Launches asynchronously on `device`; output buffers are returned at once and become
  // ready when the computation finishes (Buffer::await_ready). Arguments the program aliases to
  // an output (`tf.aliasing_output`) are donated, and then deleted, unless listed in
  // `non_donatable` (argument indices).
  std::vector<BufferPtr> execute(const std::vector<PJRT_Buffer*>& args, PJRT_Device* device,
                                 const std::vector<int64_t>& non_donatable = {}) const;
  // Launches a program compiled for N replicas on all of them with ONE Execute call:
  // `arg_lists[r]` are replica r's arguments (on its device), the result holds replica r's
  // outputs. One call, not N single-device launches: the plugin schedules the replicas of a
  // launch together, so their collectives meet; N launches from N threads can deadlock.
  // Each call gets a fresh launch id, so overlapping launches are told apart.
  std::vector<std::vector<BufferPtr>> execute_replicated(
      const std::vector<std::vector<PJRT_Buffer*>>& arg_lists) const;
  // The devices the program runs on, in replica order (its compile-time device assignment).
  std::vector<PJRT_Device*> addressable_devices() const;
  // Bytes that Client::deserialize turns back into an equivalent executable.
  std::string serialize() const;
  // The program after the plugin's optimizations, in `format` ("hlo": a serialized
  // HloModuleProto); empty when the plugin does not expose it.
  std::string optimized_program(std::string& format) const;

 private:
  const PJRT_Api* api_;
  PJRT_LoadedExecutable* loaded_;
  PJRT_Executable* exe_ = nullptr;
  size_t num_outputs_ = 0;
};

using ExecutablePtr = std::shared_ptr<Executable>;

}  // namespace tpu::runtime
