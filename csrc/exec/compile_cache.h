// In-memory cache of compiled op programs, keyed by OpCall::key() bytes. Bounded (LRU).
#pragma once
#include <cstdint>
#include <list>
#include <memory>
#include <mutex>
#include <string>
#include <unordered_map>
#include <vector>

#include "exec/op_call.h"
#include "exec/op_program.h"
#include "runtime/executable.h"

namespace tpu::exec {

struct CompiledOp {
  runtime::ExecutablePtr executable;
  OutputPlan plan;
  ProgramLayout layout;
  std::string op_name;
  double compile_seconds = 0;
  int64_t uses = 0;
  // A call run by a program compiled for buckets (docs/dynamic_shapes.md): its symbols and the
  // layouts of the storages it writes and of its new outputs.
  std::shared_ptr<const DynamicSpec> dynamic;
  std::vector<PaddedFormPtr> written_forms, output_forms;
  int64_t padded_elements = 0, real_elements = 0;  // of its results, at the bounds and real
  std::vector<std::pair<int, int>> graph_aliases;  // fused graph: (parameter, live value) donations
  // Its lowering was seen to emit no runtime check: fused mode then skips looking up the user's
  // line that recorded it (named only in check messages and dumps), about a tenth of the host
  // time of an op in a decode step.
  bool check_free = false;
};
using CompiledOpPtr = std::shared_ptr<CompiledOp>;

struct CacheEntryInfo {
  std::string op_name;
  double compile_seconds;
  int64_t uses;
  size_t key_bytes;
};

class CompileCache {
 public:
  explicit CompileCache(size_t capacity) : capacity_(capacity) {}
  CompiledOpPtr find(const std::string& key);
  void insert(const std::string& key, CompiledOpPtr op);
  void clear();
  size_t size() const;
  size_t capacity() const { return capacity_; }
  void set_capacity(size_t capacity);
  std::vector<CacheEntryInfo> entries() const;

 private:
  void evict_locked();
  using Lru = std::list<std::pair<std::string, CompiledOpPtr>>;
  mutable std::mutex mutex_;
  size_t capacity_;
  Lru lru_;  // most recently used first
  std::unordered_map<std::string, Lru::iterator> index_;
};

CompileCache& op_cache();

}  // namespace tpu::exec
