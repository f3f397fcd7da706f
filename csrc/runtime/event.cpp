#include "runtime/event.h"

#include <memory>
#include <utility>

#include "runtime/pjrt_error.h"

namespace tpu::runtime {

namespace {
void (*g_work_before_waiting)() = nullptr;
}

void set_work_before_waiting(void (*work)()) { g_work_before_waiting = work; }

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
  if (g_work_before_waiting != nullptr && !is_ready()) g_work_before_waiting();
  TPU_PJRT_ARGS(PJRT_Event_Await_Args, args);
  args.event = event_;
  check(api_, api_->PJRT_Event_Await(&args), "PJRT_Event_Await");
  TPU_PJRT_ARGS(PJRT_Event_Error_Args, err);
  err.event = event_;
  check(api_, api_->PJRT_Event_Error(&err), "device execution failed");
}

void Event::on_ready(std::function<void()> fn) const {
  if (event_ == nullptr) return fn();
  struct Arg {
    const PJRT_Api* api;
    std::function<void()> fn;
  };
  auto* arg = new Arg{api_, std::move(fn)};
  TPU_PJRT_ARGS(PJRT_Event_OnReady_Args, args);
  args.event = event_;
  args.user_arg = arg;
  // The callback owns the error it is given; an error is the awaiting side's to report.
  args.callback = [](PJRT_Error* error, void* user_arg) {
    std::unique_ptr<Arg> a(static_cast<Arg*>(user_arg));
    if (error != nullptr) {
      TPU_PJRT_ARGS(PJRT_Error_Destroy_Args, destroy);
      destroy.error = error;
      a->api->PJRT_Error_Destroy(&destroy);
    }
    a->fn();
  };
  PJRT_Error* error = api_->PJRT_Event_OnReady(&args);
  if (error != nullptr) delete arg;  // not registered: the callback will never run
  check(api_, error, "PJRT_Event_OnReady");
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
