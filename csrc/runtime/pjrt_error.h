// Turns PJRT_Error* results into C++ exceptions that carry the plugin's message.
#pragma once
#include <cstdint>
#include <stdexcept>
#include <string>

#include "pjrt_c_api.h"

namespace tpu::runtime {

class PjrtError : public std::runtime_error {
 public:
  PjrtError(std::string message, int code) : std::runtime_error(std::move(message)), code_(code) {}
  int code() const { return code_; }

 private:
  int code_;
};

// A PJRT error with code RESOURCE_EXHAUSTED, or a host allocation that failed while preparing
// device memory: the device (or, for XLA:CPU, the host) could not allocate `requested_bytes`
// (0 when the plugin does not say).
class OutOfMemory : public PjrtError {
 public:
  OutOfMemory(std::string message, int64_t requested_bytes)
      : PjrtError(std::move(message), PJRT_Error_Code_RESOURCE_EXHAUSTED),
        requested_bytes_(requested_bytes) {}
  int64_t requested_bytes() const { return requested_bytes_; }

 private:
  int64_t requested_bytes_;
};

// Reads, frees and throws `error` if it is non-null. `what` names the call for the message.
void check(const PJRT_Api* api, PJRT_Error* error, const char* what);

// Zero-initialised PJRT args struct with struct_size set as the header defines it.
#define TPU_PJRT_ARGS(T, name) \
  T name{};                    \
  name.struct_size = T##_STRUCT_SIZE

}  // namespace tpu::runtime
