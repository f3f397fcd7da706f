#include "exec/timeline.h"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <memory>
#include <mutex>

namespace tpu::exec {

namespace {

std::mutex g_mutex;
std::atomic<bool> g_collecting{false};
std::vector<Span> g_events;                    // guarded by g_mutex
std::map<std::string, ProgramTimes> g_totals;  // guarded by g_mutex
std::map<int, int64_t> g_device_free_ns;       // per device: when its last execution finished

}  // namespace

const char* span_kind_name(SpanKind kind) {
  switch (kind) {
    case SpanKind::Compile:
      return "compile";
    case SpanKind::Launch:
      return "launch";
    case SpanKind::Execute:
      return "execute";
    case SpanKind::Transfer:
      return "transfer";
    case SpanKind::Flush:
      return "flush";
  }
  return "?";
}

int64_t now_ns() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

void begin_collecting() {
  std::lock_guard<std::mutex> lock(g_mutex);
  g_events.clear();
  g_collecting = true;
}

std::vector<Span> end_collecting() {
  std::lock_guard<std::mutex> lock(g_mutex);
  g_collecting = false;
  return std::move(g_events);
}

void note_span(Span span) {
  if (!g_collecting.load(std::memory_order_relaxed)) return;
  std::lock_guard<std::mutex> lock(g_mutex);
  if (g_collecting) g_events.push_back(std::move(span));
}

void note_execution(const std::string& program, int64_t launch_begin_ns, int device,
                    const runtime::BufferPtr& first_output) {
  const int64_t launch_end_ns = now_ns();
  {
    std::lock_guard<std::mutex> lock(g_mutex);
    ProgramTimes& t = g_totals[program];
    t.executions++;
    t.launch_seconds += (launch_end_ns - launch_begin_ns) * 1e-9;
    if (g_collecting) g_events.push_back({SpanKind::Launch, program, launch_begin_ns, launch_end_ns, device});
  }
  if (!first_output) return;
  // The callback may outlive this frame (it runs on the plugin's thread when the outputs are
  // ready): it owns copies of what it needs.
  first_output->ready_event().on_ready([program, launch_begin_ns, device] {
    const int64_t ready = now_ns();
    std::lock_guard<std::mutex> lock(g_mutex);
    int64_t& free_at = g_device_free_ns[device];
    // Ready callbacks run on the plugin's threads, not always in completion order: a free time
    // at or past this `ready` comes from an earlier execution whose callback ran late, so it
    // says nothing of when this one started; its launch is then the bound.
    const int64_t begin = free_at < ready ? std::max(launch_begin_ns, free_at) : launch_begin_ns;
    free_at = std::max(free_at, ready);
    g_totals[program].device_seconds += (ready - begin) * 1e-9;
    if (g_collecting) g_events.push_back({SpanKind::Execute, program, begin, ready, device});
  });
}

std::map<std::string, ProgramTimes> program_times() {
  std::lock_guard<std::mutex> lock(g_mutex);
  return g_totals;
}

void reset_program_times() {
  std::lock_guard<std::mutex> lock(g_mutex);
  g_totals.clear();
}

}  // namespace tpu::exec
