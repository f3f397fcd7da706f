#include "exec/bucket_policy.h"

#include <atomic>
#include <cstdlib>
#include <mutex>
#include <stdexcept>
#include <string>

namespace tpu::exec {

namespace {

std::once_flag g_env_once;
std::atomic<bool> g_enabled{true};
std::atomic<int64_t> g_minimum{128}, g_granule{0};

void read_environment() {
  std::call_once(g_env_once, [] {
    if (const char* v = std::getenv("TORCH_TPU_DYNAMIC")) g_enabled = std::string(v) != "0";
    if (const char* v = std::getenv("TORCH_TPU_BUCKETS")) {
      char* end = nullptr;
      const long long minimum = std::strtoll(v, &end, 10);
      const long long granule = (end && *end == ',') ? std::strtoll(end + 1, nullptr, 10) : 0;
      if (minimum >= 1 && granule >= 0) {
        g_minimum = minimum;
        g_granule = granule;
      }
    }
  });
}

}  // namespace

bool dynamic_shapes_enabled() {
  read_environment();
  return g_enabled;
}

void set_dynamic_shapes_enabled(bool on) {
  read_environment();
  g_enabled = on;
}

BucketPolicy bucket_policy() {
  read_environment();
  return {g_minimum, g_granule};
}

void set_bucket_policy(const BucketPolicy& policy) {
  read_environment();
  if (policy.minimum < 1) throw std::invalid_argument("the smallest bucket must be at least 1");
  if (policy.granule < 0) throw std::invalid_argument("the bucket granule must not be negative");
  g_minimum = policy.minimum;
  g_granule = policy.granule;
}

int64_t bucket(int64_t n) {
  read_environment();
  const int64_t granule = g_granule;
  if (granule > 0 && n > granule) return (n + granule - 1) / granule * granule;
  int64_t b = g_minimum;
  while (b < n) b *= 2;
  return b;
}

}  // namespace tpu::exec
