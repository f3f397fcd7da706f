#include "exec/compile_cache.h"

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

CompileCache& op_cache() {
  static CompileCache cache(8192);
  return cache;
}

}  // namespace tpu::exec
