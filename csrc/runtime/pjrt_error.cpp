#include "runtime/pjrt_error.h"

#include <cctype>

namespace tpu::runtime {

namespace {

// XLA says "Out of memory allocating 34359738368 bytes." (XLA:CPU; the GPU and TPU runtimes
// word it alike): the first number before "bytes".
int64_t allocation_size(const std::string& text) {
  size_t at = text.find(" bytes");
  if (at == std::string::npos) return 0;
  size_t start = at;
  while (start > 0 && std::isdigit(static_cast<unsigned char>(text[start - 1]))) --start;
  return start == at ? 0 : std::stoll(text.substr(start, at - start));
}

}  // namespace

void check(const PJRT_Api* api, PJRT_Error* error, const char* what) {
  if (error == nullptr) return;
  TPU_PJRT_ARGS(PJRT_Error_Message_Args, msg);
  msg.error = error;
  api->PJRT_Error_Message(&msg);
  std::string text(msg.message, msg.message_size);
  TPU_PJRT_ARGS(PJRT_Error_GetCode_Args, code);
  code.error = error;
  int code_value = 0;
  if (api->PJRT_Error_GetCode(&code) == nullptr) code_value = static_cast<int>(code.code);
  TPU_PJRT_ARGS(PJRT_Error_Destroy_Args, destroy);
  destroy.error = error;
  api->PJRT_Error_Destroy(&destroy);
  std::string message = std::string(what) + ": " + text;
  // An allocation that fails inside an asynchronous execution reaches us through its event,
  // whose error keeps XLA's text but not always its code.
  if (code_value == PJRT_Error_Code_RESOURCE_EXHAUSTED || text.find("Out of memory") != std::string::npos)
    throw OutOfMemory(message, allocation_size(text));
  throw PjrtError(message, code_value);
}

}  // namespace tpu::runtime
