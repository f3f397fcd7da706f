// RAII handle on a PJRT_Event: completion of a transfer or an execution.
#pragma once
#include <functional>
#include <utility>

#include "pjrt_c_api.h"

namespace tpu::runtime {

// Work the host does before it blocks on an event that has not fired: waiting, it has nothing
// else to do (the exec layer frees the nodes of graphs that have run).
void set_work_before_waiting(void (*work)());

class Event {
 public:
  Event() = default;
  Event(const PJRT_Api* api, PJRT_Event* event) : api_(api), event_(event) {}
  Event(Event&& other) noexcept { *this = std::move(other); }
  Event& operator=(Event&& other) noexcept;
  Event(const Event&) = delete;
  Event& operator=(const Event&) = delete;
  ~Event() { reset(); }

  bool valid() const { return event_ != nullptr; }
  bool is_ready() const;
  // Blocks until the event fires; throws PjrtError carrying the plugin's message on failure.
  void await() const;
  // Calls `fn` once the event fires (at once when it already has), on whichever thread fires
  // it; `fn` must not block and must not own this Event (it may run after the Event is gone).
  void on_ready(std::function<void()> fn) const;

 private:
  void reset();
  const PJRT_Api* api_ = nullptr;
  PJRT_Event* event_ = nullptr;
};

}  // namespace tpu::runtime
