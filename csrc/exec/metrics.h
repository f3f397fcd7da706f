// Process-wide counters: what ran, what compiled, what moved between host and device.
#pragma once
#include <atomic>
#include <map>
#include <string>

namespace tpu::exec {

struct Counters {
  std::atomic<int64_t> ops_dispatched{0};
  std::atomic<int64_t> executions{0};
  std::atomic<int64_t> compiles{0};
  std::atomic<int64_t> cache_hits{0};
  std::atomic<int64_t> cache_misses{0};
  std::atomic<int64_t> compile_nanos{0};
  std::atomic<int64_t> h2d_transfers{0};
  std::atomic<int64_t> h2d_bytes{0};
  std::atomic<int64_t> d2h_transfers{0};
  std::atomic<int64_t> d2h_bytes{0};
  // Input buffers a program wrote its output into (in-place updates that allocated nothing).
  std::atomic<int64_t> donated_buffers{0};
  // Compiled (torch.compile) graphs run from their captured program, without recording.
  std::atomic<int64_t> graph_replays{0};
  // Launches of programs compiled for buckets (docs/dynamic_shapes.md), and the elements their
  // results hold at the bounds against the real ones (the padding overhead is their ratio).
  std::atomic<int64_t> padded_launches{0};
  std::atomic<int64_t> padded_elements{0};
  std::atomic<int64_t> real_elements{0};
  // Persistent compile cache (disk_cache.h): loaded instead of compiled, not found, written,
  // damaged or unwritable, removed by the size limit.
  std::atomic<int64_t> disk_hits{0};
  std::atomic<int64_t> disk_misses{0};
  std::atomic<int64_t> disk_writes{0};
  std::atomic<int64_t> disk_errors{0};
  std::atomic<int64_t> disk_evictions{0};
};

Counters& counters();
void count_fallback(const std::string& op);
std::map<std::string, int64_t> fallback_counts();
// Every counter by name (compile seconds as "compile_seconds" in the double map).
std::map<std::string, double> metrics_snapshot();
void reset_metrics();

}  // namespace tpu::exec
