// The launch log and markers over it: what torch.tpu.Event records and waits on.
//
// Every launch is noted with its device and its completion event (the executor's track()).
// A LaunchMarker captures "all work launched on device d so far" as a position in that log and
// can be queried and awaited later, any number of times. It holds completion events, never
// output buffers (see "Buffer donation" in docs/architecture.md), and a launch leaves the log
// only after it completed, so a marker finding none of its launches left knows they are done.
#pragma once
#include <chrono>
#include <cstdint>
#include <memory>
#include <vector>

#include "runtime/event.h"

namespace tpu::exec {

// Notes a launch on `device`, complete when `done` fires. With many launches outstanding on a
// device, waits for the oldest half first, so the log (and host run-ahead) stays bounded.
void note_launch(int device, runtime::Event done);

// Waits for every launch noted so far on any device and forgets it, then rethrows the first
// error among them. With `keep_failed_unless_oom`, a launch that failed for another reason
// than lack of memory stays noted (its error is for the next wait) and nothing is rethrown.
void await_noted_launches(bool keep_failed_unless_oom = false);

struct LaunchCompletion;  // one noted launch (launch_marker.cpp)

class LaunchMarker {
 public:
  // Captures all work launched on `device` so far. Work the fused graph has recorded but not
  // launched is covered too: without `timing` the graph is flushed by the first query() or
  // await() rather than now (a record must not cut the graph: DDP records an event per
  // bucket), which makes the marker also cover work recorded or launched in between. With
  // `timing` the graph is flushed now, so the completion time is that of this point.
  LaunchMarker(int device, bool timing);

  int device() const { return device_; }
  // True once the captured work has completed (successfully or not); never waits for it.
  bool query();
  // Waits for the captured work; rethrows the execution error of any of it.
  void await();
  // Milliseconds from this marker's completion to `end`'s; both must be timed and complete.
  double elapsed_ms(LaunchMarker& end);

 private:
  void resolve_fused();
  std::vector<std::shared_ptr<LaunchCompletion>> outstanding() const;
  // When the captured work completed: the latest completion stamp of its launches, or the
  // capture itself when they had all completed before. Only for timing markers.
  std::chrono::steady_clock::time_point completed_at();

  int device_;
  uint64_t last_seq_ = 0;  // the device's launches up to this one are covered
  bool fused_pending_ = false;
  bool complete_ = false;
  std::chrono::steady_clock::time_point captured_at_;
  std::vector<std::shared_ptr<LaunchCompletion>> timed_;  // timing: launches outstanding at capture
};

}  // namespace tpu::exec
