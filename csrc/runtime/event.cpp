#include "runtime/event.h"

#include <utility>

#include "runtime/pjrt_error.h"

namespace tpu::runtime {

Event& Event::operator=(Event&& other) noexcept {
  if (this != &other) {
    reset();
    api_ = std::exchange(other.api_, nullptr);
    event_ = std::exchange(other.event_, nullptr);
  }
  return *this;
}

bool Event::is_ready() const {
  if (event_ == nullptr) return true;
  TPU_PJRT_ARGS(PJRT_Event_IsReady_Args, args);
  args.event = event_;
  check(api_, api_->PJRT_Event_IsReady(&args), "PJRT_Event_IsReady");
  return args.is_ready;
}

void Event::await() const {
  if (event_ == nullptr) return;
  TPU_PJRT_ARGS(PJRT_Event_Await_Args, args);
  args.event = event_;
  check(api_, api_->PJRT_Event_Await(&args), "PJRT_Event_Await");
  TPU_PJRT_ARGS(PJRT_Event_Error_Args, err);
  err.event = event_;
  check(api_, api_->PJRT_Event_Error(&err), "device execution failed");
}

void Event::reset() {
  if (event_ != nullptr) {
    TPU_PJRT_ARGS(PJRT_Event_Destroy_Args, args);
    args.event = event_;
    api_->PJRT_Event_Destroy(&args);
    event_ = nullptr;
  }
}

}  // namespace tpu::runtime
