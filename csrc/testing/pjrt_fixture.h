// Shared plugin/client for the unit tests and a helper that compiles a StableHLO module, runs it
// on host data and returns the outputs' bytes. The plugin is TORCH_TPU_TEST_PLUGIN when set, else
// the xla-cpu-pjrt wheel's found at configure time (CMakeLists.txt).
#pragma once
#include <cstdlib>
#include <cstring>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

#include "exec/device_context.h"
#include "ir/builder.h"
#include "ir/dtype.h"
#include "runtime/client.h"
#include "runtime/plugin.h"

namespace tpu::testing {

inline std::string plugin_path() {
  const char* p = std::getenv("TORCH_TPU_TEST_PLUGIN");
  return p != nullptr && *p != 0 ? p : TORCH_TPU_TEST_PLUGIN_DEFAULT;
}

inline std::shared_ptr<runtime::Plugin> plugin() {
  static std::shared_ptr<runtime::Plugin> p = runtime::Plugin::load(plugin_path());
  return p;
}

inline runtime::Client& client() {
  static runtime::Client c(plugin(), {});
  return c;
}

inline PJRT_Buffer_Type buffer_type(ir::DType t) { return exec::pjrt_type(t); }

// Dense host data of one array: raw bytes, major-to-minor.
struct HostArray {
  ir::DType dtype = ir::DType::F32;
  std::vector<int64_t> dims;
  std::vector<uint8_t> bytes;

  template <typename T>
  static HostArray of(ir::DType dtype, std::vector<int64_t> dims, const std::vector<T>& values) {
    HostArray a{dtype, std::move(dims), {}};
    a.bytes.resize(values.size() * sizeof(T));
    if (!values.empty()) std::memcpy(a.bytes.data(), values.data(), a.bytes.size());
    return a;
  }
  template <typename T>
  std::vector<T> as() const {
    std::vector<T> out(bytes.size() / sizeof(T));
    if (!out.empty()) std::memcpy(out.data(), bytes.data(), out.size() * sizeof(T));
    return out;
  }
};

inline int64_t numel(const std::vector<int64_t>& dims) {
  int64_t n = 1;
  for (int64_t d : dims) n *= d;
  return n;
}

inline std::vector<runtime::BufferPtr> execute(const runtime::Executable& exe,
                                               const std::vector<HostArray>& inputs) {
  runtime::Client& c = client();
  std::vector<runtime::BufferPtr> keep;
  std::vector<PJRT_Buffer*> args;
  for (const HostArray& a : inputs) {
    keep.push_back(c.buffer_from_host(a.bytes.data(), buffer_type(a.dtype), a.dims, 0));
    args.push_back(keep.back()->raw());
  }
  return exe.execute(args, c.device(0));
}

// Result types are those of `types` (one per output, as the module declares them).
inline std::vector<HostArray> download(const std::vector<runtime::BufferPtr>& outs,
                                       const std::vector<ir::Type>& types) {
  if (outs.size() != types.size())
    throw std::runtime_error("executable returned " + std::to_string(outs.size()) + " outputs, expected " +
                             std::to_string(types.size()));
  std::vector<HostArray> result;
  for (size_t i = 0; i < outs.size(); ++i) {
    HostArray h{types[i].dtype, types[i].shape, {}};
    h.bytes.resize(static_cast<size_t>(numel(h.dims)) * ir::itemsize(h.dtype));
    outs[i]->to_host(h.bytes.data(), h.bytes.size());
    result.push_back(std::move(h));
  }
  return result;
}

// Compiles the builder's module, runs it on `inputs` (one per param, in order) and returns its
// results. Throws (with the module text appended) when compilation fails.
inline std::vector<HostArray> run(const ir::Builder& b, const std::vector<HostArray>& inputs) {
  std::string text = b.module_text();
  runtime::ExecutablePtr exe;
  try {
    exe = client().compile(text);
  } catch (const std::exception& e) {
    throw std::runtime_error(std::string(e.what()) + "\n--- module ---\n" + text);
  }
  std::vector<ir::Type> types;
  for (const ir::Value& v : b.results()) types.push_back(v.type);
  return download(execute(*exe, inputs), types);
}

// Runs the unary `fn` on `xs` as a [n] array of `dtype` (F32 or F64); returns the results as
// doubles.
template <typename Fn>
std::vector<double> run_unary(Fn fn, ir::DType dtype, const std::vector<double>& xs) {
  ir::Builder b;
  int64_t n = static_cast<int64_t>(xs.size());
  b.set_results({fn(b, b.param(ir::Type{dtype, {n}}))});
  HostArray in = dtype == ir::DType::F32 ? HostArray::of(dtype, {n}, std::vector<float>(xs.begin(), xs.end()))
                                         : HostArray::of(dtype, {n}, xs);
  HostArray out = run(b, {in}).at(0);
  if (dtype != ir::DType::F32) return out.as<double>();
  std::vector<float> f = out.as<float>();
  return std::vector<double>(f.begin(), f.end());
}

}  // namespace tpu::testing
