#include "exec/metrics.h"

#include <mutex>

namespace tpu::exec {

namespace {
std::mutex g_fallback_mutex;
std::map<std::string, int64_t> g_fallbacks;
}  // namespace

Counters& counters() {
  static Counters c;
  return c;
}

void count_fallback(const std::string& op) {
  std::lock_guard<std::mutex> lock(g_fallback_mutex);
  ++g_fallbacks[op];
}

std::map<std::string, int64_t> fallback_counts() {
  std::lock_guard<std::mutex> lock(g_fallback_mutex);
  return g_fallbacks;
}

std::map<std::string, double> metrics_snapshot() {
  Counters& c = counters();
  int64_t fallbacks = 0;
  for (const auto& [op, n] : fallback_counts()) fallbacks += n;
  return {
      {"ops_dispatched", double(c.ops_dispatched)},
      {"executions", double(c.executions)},
      {"compiles", double(c.compiles)},
      {"cache_hits", double(c.cache_hits)},
      {"cache_misses", double(c.cache_misses)},
      {"compile_seconds", double(c.compile_nanos) * 1e-9},
      {"h2d_transfers", double(c.h2d_transfers)},
      {"h2d_bytes", double(c.h2d_bytes)},
      {"d2h_transfers", double(c.d2h_transfers)},
      {"d2h_bytes", double(c.d2h_bytes)},
      {"donated_buffers", double(c.donated_buffers)},
      {"graph_replays", double(c.graph_replays)},
      {"padded_launches", double(c.padded_launches)},
      {"padded_elements", double(c.padded_elements)},
      {"real_elements", double(c.real_elements)},
      {"fallbacks", double(fallbacks)},
      {"disk_hits", double(c.disk_hits)},
      {"disk_misses", double(c.disk_misses)},
      {"disk_writes", double(c.disk_writes)},
      {"disk_errors", double(c.disk_errors)},
      {"disk_evictions", double(c.disk_evictions)},
  };
}

void reset_metrics() {
  Counters& c = counters();
  for (auto* a :
       {&c.ops_dispatched,  &c.executions,    &c.compiles,        &c.cache_hits,      &c.cache_misses,
        &c.compile_nanos,   &c.h2d_transfers, &c.h2d_bytes,       &c.d2h_transfers,   &c.d2h_bytes,
        &c.donated_buffers, &c.graph_replays, &c.padded_launches, &c.padded_elements, &c.real_elements,
        &c.disk_hits,       &c.disk_misses,   &c.disk_writes,     &c.disk_errors,     &c.disk_evictions})
    a->store(0);
  std::lock_guard<std::mutex> lock(g_fallback_mutex);
  g_fallbacks.clear();
}

}  // namespace tpu::exec
