#include "exec/compile_cache.h"

#include <algorithm>
#include <fstream>

namespace tpu::exec {

CompiledOpPtr CompileCache::find(const std::string& key) {
  std::lock_guard<std::mutex> lock(mutex_);
  auto it = index_.find(key);
  if (it == index_.end()) return nullptr;
  lru_.splice(lru_.begin(), lru_, it->second);
  return it->second->second;
}

void CompileCache::insert(const std::string& key, CompiledOpPtr op) {
  std::lock_guard<std::mutex> lock(mutex_);
  auto it = index_.find(key);
  if (it != index_.end()) {
    it->second->second = std::move(op);
    lru_.splice(lru_.begin(), lru_, it->second);
    return;
  }
  lru_.emplace_front(key, std::move(op));
  index_[key] = lru_.begin();
  evict_locked();
}

void CompileCache::evict_locked() {
  while (lru_.size() > capacity_) {
    index_.erase(lru_.back().first);
    lru_.pop_back();
  }
}

void CompileCache::clear() {
  std::lock_guard<std::mutex> lock(mutex_);
  lru_.clear();
  index_.clear();
}

size_t CompileCache::size() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return lru_.size();
}

void CompileCache::set_capacity(size_t capacity) {
  std::lock_guard<std::mutex> lock(mutex_);
  capacity_ = capacity;
  evict_locked();
}

std::vector<CacheEntryInfo> CompileCache::entries() const {
  std::lock_guard<std::mutex> lock(mutex_);
  std::vector<CacheEntryInfo> out;
  for (const auto& [key, op] : lru_) out.push_back({op->op_name, op->compile_seconds, op->uses, key.size()});
  return out;
}

namespace {

// Each loaded XLA:CPU executable keeps a few memory maps of JIT code and data (3 for a one-op
// program, more for large ones). A process past the kernel's vm.max_map_count makes LLVM's JIT
// fail to allocate and XLA crash, so the cache holds at most a sixteenth of that limit.
size_t default_capacity() {
  size_t limit = 65530;
  std::ifstream f("/proc/sys/vm/max_map_count");
  if (f) f >> limit;
  return std::clamp<size_t>(limit / 16, 256, 8192);
}

}  // namespace

CompileCache& op_cache() {
  static CompileCache cache(default_capacity());
  return cache;
}

}  // namespace tpu::exec
