#include "runtime/pjrt_error.h"

namespace tpu::runtime {

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
  throw PjrtError(std::string(what) + ": " + text, code_value);
}

}  // namespace tpu::runtime
