#include "exec/compiled_op_store.h"

#include <dlfcn.h>
#include <sys/stat.h>

#include <cstring>
#include <mutex>
#include <stdexcept>

#include "exec/device_context.h"
#include "exec/disk_cache.h"
#include "exec/metrics.h"

namespace tpu::exec {

namespace {

std::mutex g_identity_mutex;
std::string g_extra;
const runtime::Client* g_identity_client = nullptr;
std::string g_identity;  // of g_identity_client and g_extra

class Writer {
 public:
  template <typename T>
  void pod(const T& v) {
    out.append(reinterpret_cast<const char*>(&v), sizeof v);
  }
  void str(const std::string& s) {
    pod(static_cast<uint64_t>(s.size()));
    out += s;
  }
  template <typename T>
  void list(const std::vector<T>& v) {
    pod(static_cast<uint32_t>(v.size()));
    for (const T& x : v) pod(x);
  }
  void dtype(ir::DType d) { pod(static_cast<uint8_t>(d)); }
  std::string out;
};

class Reader {
 public:
  explicit Reader(const std::string& in) : in_(in) {}
  template <typename T>
  T pod() {
    need(sizeof(T));
    T v;
    std::memcpy(&v, in_.data() + pos_, sizeof v);
    pos_ += sizeof v;
    return v;
  }
  std::string str() {
    uint64_t n = pod<uint64_t>();
    need(n);
    std::string s = in_.substr(pos_, n);
    pos_ += n;
    return s;
  }
  template <typename T>
  std::vector<T> list() {
    uint32_t n = pod<uint32_t>();
    need(uint64_t(n) * sizeof(T));
    std::vector<T> v(n);
    for (T& x : v) x = pod<T>();
    return v;
  }
  uint32_t count() {
    uint32_t n = pod<uint32_t>();
    if (n > in_.size() - pos_) throw std::runtime_error("malformed compiled op entry (bad count)");
    return n;
  }
  ir::DType dtype() {
    uint8_t d = pod<uint8_t>();
    if (d > static_cast<uint8_t>(ir::kLastDType))
      throw std::runtime_error("malformed compiled op entry (dtype " + std::to_string(d) + ")");
    return static_cast<ir::DType>(d);
  }
  bool done() const { return pos_ == in_.size(); }

 private:
  void need(uint64_t n) const {
    if (n > in_.size() - pos_) throw std::runtime_error("malformed compiled op entry (truncated)");
  }
  const std::string& in_;
  size_t pos_ = 0;
};

void put_field(std::string& s, const std::string& name, const std::string& value) {
  Writer w;
  w.str(name);
  w.str(value);
  s += w.out;
}

// Path, size and mtime of a file: a rebuilt or replaced library gets a new identity.
std::string file_stamp(const std::string& path) {
  struct stat st;
  if (path.empty() || ::stat(path.c_str(), &st) != 0) return path + " (unknown)";
  return path + " " + std::to_string(st.st_size) + " " + std::to_string(st.st_mtim.tv_sec) + "." +
         std::to_string(st.st_mtim.tv_nsec);
}

std::string own_library_path() {
  Dl_info info;
  if (::dladdr(reinterpret_cast<void*>(&cache_identity), &info) != 0 && info.dli_fname != nullptr)
    return info.dli_fname;
  return {};
}

std::string compute_identity(const runtime::Client& client, const std::string& extra) {
  std::string s;
  put_field(s, "format", std::to_string(kCompiledOpFormat));
  put_field(s, "platform_name", client.platform_name());
  put_field(s, "platform_version", client.platform_version());
  put_field(s, "pjrt_api",
            std::to_string(client.plugin().api_major()) + "." + std::to_string(client.plugin().api_minor()));
  for (const auto& [name, value] : client.plugin().attributes()) put_field(s, "attr:" + name, value);
  // The chip: platform_version names the plugin build, not always which chip it drives, and a
  // cache directory may be shared between hosts (an NFS home).
  put_field(
      s, "devices",
      std::to_string(client.device_count()) + " " + (client.device_count() > 0 ? client.device_kind(0) : ""));
  // XLA_FLAGS and LIBTPU_INIT_ARGS as the plugin read them: they change the programs it builds
  // (e.g. --xla_cpu_enable_fast_math), so another value must compile again.
  for (const auto& [name, value] : client.compile_environment()) put_field(s, "env:" + name, value);
  put_field(s, "plugin_file", file_stamp(client.plugin().path()));
  put_field(s, "torch_tpu_library", file_stamp(own_library_path()));
  put_field(s, "extra", extra);
  return s;
}

void warn_store_failure_once(const std::string& message) {
  static std::once_flag once;
  std::call_once(once, [&] { cache_warning(message); });
}

}  // namespace

void set_cache_identity_extra(const std::string& extra) {
  std::lock_guard<std::mutex> lock(g_identity_mutex);
  g_extra = extra;
  g_identity_client = nullptr;
}

std::string cache_identity(const runtime::Client& client) {
  std::lock_guard<std::mutex> lock(g_identity_mutex);
  if (g_identity_client != &client) {
    g_identity = compute_identity(client, g_extra);
    g_identity_client = &client;
  }
  return g_identity;
}

std::string persistent_key(const OpCall& call, const std::string& key) {
  const lowering::Lowering* l = call.lowering;
  if (l == nullptr || key.size() < sizeof l || std::memcmp(key.data(), &l, sizeof l) != 0) return {};
  Writer w;
  w.str(l->name);
  w.pod(l->static_args);
  w.pod(static_cast<uint8_t>(l->random));
  w.out.append(key, sizeof l, std::string::npos);
  return w.out;
}

std::string encode_compiled_op(const CompiledOp& op) {
  Writer w;
  w.pod(kCompiledOpFormat);
  const OutputPlan& plan = op.plan;
  w.pod(static_cast<uint32_t>(plan.result_types.size()));
  for (const ir::Type& t : plan.result_types) {
    w.dtype(t.dtype);
    w.list(t.shape);
  }
  w.pod(static_cast<uint32_t>(plan.new_outputs.size()));
  for (const OutputPlan::NewOutput& o : plan.new_outputs) {
    w.list(o.sizes);
    w.list(o.strides);
    w.dtype(o.dtype);
  }
  w.list(plan.return_counts);
  const ProgramLayout& layout = op.layout;
  w.list(layout.input_storages);
  w.list(layout.written_storages);
  w.pod(static_cast<uint32_t>(layout.written_dtypes.size()));
  for (ir::DType d : layout.written_dtypes) w.dtype(d);
  w.pod(static_cast<uint32_t>(layout.check_messages.size()));
  for (const std::string& m : layout.check_messages) w.str(m);
  w.str(op.executable->serialize());
  return w.out;
}

CompiledOpPtr decode_compiled_op(const std::string& bytes, const runtime::Client& client) {
  Reader r(bytes);
  if (uint32_t format = r.pod<uint32_t>(); format != kCompiledOpFormat)
    throw std::runtime_error("compiled op format " + std::to_string(format));
  auto op = std::make_shared<CompiledOp>();
  OutputPlan& plan = op->plan;
  for (uint32_t n = r.count(); n > 0; --n) {
    ir::Type t;
    t.dtype = r.dtype();
    t.shape = r.list<int64_t>();
    plan.result_types.push_back(std::move(t));
  }
  for (uint32_t n = r.count(); n > 0; --n) {
    OutputPlan::NewOutput o;
    o.sizes = r.list<int64_t>();
    o.strides = r.list<int64_t>();
    o.dtype = r.dtype();
    plan.new_outputs.push_back(std::move(o));
  }
  plan.return_counts = r.list<int>();
  ProgramLayout& layout = op->layout;
  layout.input_storages = r.list<int>();
  layout.written_storages = r.list<int>();
  for (uint32_t n = r.count(); n > 0; --n) layout.written_dtypes.push_back(r.dtype());
  for (uint32_t n = r.count(); n > 0; --n) layout.check_messages.push_back(r.str());
  std::string executable = r.str();
  if (!r.done()) throw std::runtime_error("malformed compiled op entry (trailing bytes)");
  if (layout.written_dtypes.size() != layout.written_storages.size())
    throw std::runtime_error("malformed compiled op entry (layout)");
  op->executable = client.deserialize(executable);
  const size_t expected =
      layout.written_storages.size() + plan.new_outputs.size() + layout.check_messages.size();
  if (op->executable->num_outputs() != expected)
    throw std::runtime_error("executable has " + std::to_string(op->executable->num_outputs()) +
                             " outputs, its layout " + std::to_string(expected));
  return op;
}

bool same_plan(const OutputPlan& a, const OutputPlan& b) {
  if (!(a.result_types == b.result_types) || a.return_counts != b.return_counts ||
      a.new_outputs.size() != b.new_outputs.size())
    return false;
  for (size_t k = 0; k < a.new_outputs.size(); ++k) {
    const OutputPlan::NewOutput &x = a.new_outputs[k], &y = b.new_outputs[k];
    if (x.sizes != y.sizes || x.strides != y.strides || x.dtype != y.dtype) return false;
  }
  return true;
}

bool load_compiled_op(const OpCall& call, const std::string& key, CompiledOp& op) {
  return load_compiled_op(persistent_key(call, key), op);
}

bool load_compiled_op(const std::string& pkey, CompiledOp& op) {
  DiskCache& cache = disk_cache();
  if (!cache.enabled()) return false;
  if (pkey.empty()) return false;
  runtime::Client& c = client();
  const std::string full_key = cache_identity(c) + pkey;
  std::optional<std::string> bytes = cache.load(full_key);
  if (!bytes && !cache.enabled()) return false;  // the directory was refused just now: no miss
  if (bytes) {
    CompiledOpPtr stored;
    try {
      stored = decode_compiled_op(*bytes, c);
    } catch (const std::exception& e) {
      cache.discard(full_key, std::string("unusable: ") + e.what());
    }
    // Same key, other output shapes: the key lacks something the shapes depend on. Recompile
    // (and overwrite); never run a program built for other shapes.
    if (stored && same_plan(stored->plan, op.plan)) {
      op.layout = std::move(stored->layout);
      op.executable = std::move(stored->executable);
      counters().disk_hits++;
      return true;
    }
  }
  counters().disk_misses++;
  return false;
}

void store_compiled_op(const OpCall& call, const std::string& key, const CompiledOp& op) {
  store_compiled_op(persistent_key(call, key), op);
}

void store_compiled_op(const std::string& pkey, const CompiledOp& op) {
  DiskCache& cache = disk_cache();
  if (!cache.enabled()) return;
  if (pkey.empty()) return;
  runtime::Client& c = client();
  std::string payload;
  try {
    payload = encode_compiled_op(op);
  } catch (const std::exception& e) {
    counters().disk_errors++;
    warn_store_failure_once(std::string("cannot serialize compiled programs for the persistent "
                                        "compile cache: ") +
                            e.what());
    return;
  }
  cache.store(cache_identity(c) + pkey, payload);
}

}  // namespace tpu::exec
