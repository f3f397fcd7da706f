#include "exec/launch_marker.h"

#include <algorithm>
#include <atomic>
#include <deque>
#include <exception>
#include <mutex>
#include <thread>

#include "exec/fused_graph.h"
#include "runtime/pjrt_error.h"

namespace tpu::exec {

struct LaunchCompletion {
  runtime::Event done;
  // Completion time, for timing markers only: stamped by a PJRT_Event_OnReady callback that
  // the first timing marker covering this launch registers (so markers sharing a launch see
  // one time, and launches nobody times cost no callback). Nanoseconds of steady_clock; 0
  // until the callback ran. Shared with the callback, which must not own the PJRT event.
  std::once_flag stamp_once;
  std::shared_ptr<std::atomic<int64_t>> stamp;
};

namespace {

using Clock = std::chrono::steady_clock;

int64_t now_ns() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(Clock::now().time_since_epoch()).count();
}

struct Noted {
  uint64_t seq;
  std::shared_ptr<LaunchCompletion> completion;
};

// Per device: launches not yet known complete, in launch order, and the last sequence number.
struct DeviceLog {
  std::deque<Noted> launches;
  uint64_t last_seq = 0;
};

constexpr size_t kMaxOutstanding = 512;

std::mutex g_mutex;
std::vector<DeviceLog> g_logs;

DeviceLog& log_of(int device) {  // g_mutex held
  if (static_cast<size_t>(device) >= g_logs.size()) g_logs.resize(static_cast<size_t>(device) + 1);
  return g_logs[static_cast<size_t>(device)];
}

// Forgets the (awaited) launches of `device` up to `seq`, except those in `keep` (sorted).
void forget(int device, uint64_t seq, const std::vector<uint64_t>& keep = {}) {
  std::lock_guard<std::mutex> lock(g_mutex);
  std::deque<Noted>& launches = log_of(device).launches;
  std::deque<Noted> rest;
  for (Noted& n : launches)
    if (n.seq > seq || std::binary_search(keep.begin(), keep.end(), n.seq)) rest.push_back(std::move(n));
  launches.swap(rest);
}

void request_stamp(LaunchCompletion& c) {
  std::call_once(c.stamp_once, [&c] {
    c.stamp = std::make_shared<std::atomic<int64_t>>(0);
    c.done.on_ready([stamp = c.stamp] { stamp->store(now_ns(), std::memory_order_release); });
  });
}

}  // namespace

void note_launch(int device, runtime::Event done) {
  auto completion = std::make_shared<LaunchCompletion>();
  completion->done = std::move(done);
  std::vector<std::shared_ptr<LaunchCompletion>> oldest;
  uint64_t upto = 0;
  {
    std::lock_guard<std::mutex> lock(g_mutex);
    DeviceLog& log = log_of(device);
    log.launches.push_back({++log.last_seq, std::move(completion)});
    if (log.launches.size() < kMaxOutstanding) return;
    for (size_t k = 0; k < kMaxOutstanding / 2; ++k) oldest.push_back(log.launches[k].completion);
    upto = log.launches[kMaxOutstanding / 2 - 1].seq;
  }
  // Awaited before they are forgotten: a marker must never find a running launch gone.
  std::exception_ptr error;
  for (const auto& c : oldest) {
    try {
      c->done.await();
    } catch (...) {
      if (!error) error = std::current_exception();
    }
  }
  forget(device, upto);
  if (error) std::rethrow_exception(error);
}

void await_noted_launches(bool keep_failed_unless_oom) {
  std::vector<std::vector<Noted>> snapshot;
  {
    std::lock_guard<std::mutex> lock(g_mutex);
    for (const DeviceLog& log : g_logs) snapshot.emplace_back(log.launches.begin(), log.launches.end());
  }
  // Every launch is awaited even after an error, so none is forgotten while it still runs.
  std::exception_ptr error;
  for (size_t d = 0; d < snapshot.size(); ++d) {
    if (snapshot[d].empty()) continue;
    std::vector<uint64_t> kept;
    for (const Noted& n : snapshot[d]) {
      try {
        n.completion->done.await();
      } catch (const runtime::OutOfMemory&) {
        if (!keep_failed_unless_oom && !error) error = std::current_exception();
      } catch (...) {
        if (keep_failed_unless_oom)
          kept.push_back(n.seq);
        else if (!error)
          error = std::current_exception();
      }
    }
    forget(static_cast<int>(d), snapshot[d].back().seq, kept);
  }
  if (error) std::rethrow_exception(error);
}

LaunchMarker::LaunchMarker(int device, bool timing) : device_(device) {
  if (!graph_empty()) {
    if (timing)
      flush();
    else
      fused_pending_ = true;
  }
  {
    std::lock_guard<std::mutex> lock(g_mutex);
    last_seq_ = log_of(device).last_seq;
  }
  captured_at_ = Clock::now();
  if (timing) {
    timed_ = outstanding();
    for (const auto& c : timed_) request_stamp(*c);
  }
}

void LaunchMarker::resolve_fused() {
  if (!fused_pending_) return;
  // The graph that was pending at capture has run if the graph is empty now or holds other
  // nodes; either way running what it holds now covers the captured work.
  if (!graph_empty()) flush();
  std::lock_guard<std::mutex> lock(g_mutex);
  last_seq_ = log_of(device_).last_seq;
  fused_pending_ = false;
}

std::vector<std::shared_ptr<LaunchCompletion>> LaunchMarker::outstanding() const {
  std::vector<std::shared_ptr<LaunchCompletion>> out;
  std::lock_guard<std::mutex> lock(g_mutex);
  for (const Noted& n : log_of(device_).launches) {
    if (n.seq > last_seq_) break;
    out.push_back(n.completion);
  }
  return out;
}

bool LaunchMarker::query() {
  if (complete_) return true;
  resolve_fused();
  for (const auto& c : outstanding())
    if (!c->done.is_ready()) return false;
  complete_ = true;
  return true;
}

void LaunchMarker::await() {
  resolve_fused();
  for (const auto& c : outstanding()) c->done.await();
  complete_ = true;
}

Clock::time_point LaunchMarker::completed_at() {
  await();
  int64_t latest =
      std::chrono::duration_cast<std::chrono::nanoseconds>(captured_at_.time_since_epoch()).count();
  for (const auto& c : timed_) {
    // The event has fired; its callback may still be running on the thread that fired it.
    int64_t t;
    while ((t = c->stamp->load(std::memory_order_acquire)) == 0) std::this_thread::yield();
    latest = std::max(latest, t);
  }
  return Clock::time_point(std::chrono::nanoseconds(latest));
}

double LaunchMarker::elapsed_ms(LaunchMarker& end) {
  const auto start_time = completed_at();
  const auto end_time = end.completed_at();
  // Launches both markers cover share one stamp, so end never precedes start by more than
  // the moment a callback of an already forgotten launch may lag its await; clamp that.
  return std::max(0.0, std::chrono::duration<double, std::milli>(end_time - start_time).count());
}

}  // namespace tpu::exec
