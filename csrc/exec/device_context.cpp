#include "exec/device_context.h"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <stdexcept>
#include <vector>

#include "exec/metrics.h"
#include "exec/timeline.h"
#include "runtime/host_memory.h"

namespace tpu::exec {

namespace {
std::mutex g_init_mutex;
std::unique_ptr<runtime::Client> g_client;
std::string g_plugin_path;
// Set at import; the plugin is loaded on first use so `import torch` stays cheap.
std::string g_configured_path, g_configured_error;
std::map<std::string, int64_t> g_configured_options;
bool g_configured_host_memory = false;
std::atomic<Mode> g_mode{Mode::Strict};
}  // namespace

void init_runtime(const std::string& plugin_path, const std::map<std::string, int64_t>& options,
                  bool host_memory) {
  std::lock_guard<std::mutex> lock(g_init_mutex);
  if (g_client) {
    if (plugin_path != g_plugin_path)
      throw std::runtime_error("torch_tpu: the PJRT runtime is already initialised with '" + g_plugin_path +
                               "'");
    return;
  }
  auto plugin = runtime::Plugin::load(plugin_path);
  if (host_memory) runtime::retain_freed_host_memory();
  // Plugins log informational lines to stderr while the client starts (absl is not yet
  // initialised in them); errors still come back as PJRT_Error. Silence that start-up chatter
  // unless TORCH_TPU_VERBOSE_PLUGIN is set.
  const char* verbose = std::getenv("TORCH_TPU_VERBOSE_PLUGIN");
  int saved_stderr = -1;
  if (verbose == nullptr || std::string(verbose) == "0") {
    fflush(stderr);
    saved_stderr = dup(2);
    int devnull = open("/dev/null", O_WRONLY);
    if (devnull >= 0) {
      dup2(devnull, 2);
      close(devnull);
    }
  }
  auto restore = [&] {
    if (saved_stderr >= 0) {
      fflush(stderr);
      dup2(saved_stderr, 2);
      close(saved_stderr);
      saved_stderr = -1;
    }
  };
  try {
    g_client = std::make_unique<runtime::Client>(plugin, options);
  } catch (...) {
    restore();
    throw;
  }
  restore();
  g_plugin_path = plugin_path;
}

bool runtime_initialized() { return g_client != nullptr; }

void configure_runtime(const std::string& plugin_path, const std::map<std::string, int64_t>& options,
                       bool host_memory, const std::string& error) {
  std::lock_guard<std::mutex> lock(g_init_mutex);
  g_configured_path = plugin_path;
  g_configured_options = options;
  g_configured_host_memory = host_memory;
  g_configured_error = error;
}

runtime::Client& client() {
  if (!g_client) {
    std::string path, error;
    std::map<std::string, int64_t> options;
    bool host_memory = false;
    {
      std::lock_guard<std::mutex> lock(g_init_mutex);
      path = g_configured_path;
      error = g_configured_error;
      options = g_configured_options;
      host_memory = g_configured_host_memory;
    }
    if (!error.empty()) throw std::runtime_error(error);
    if (path.empty())
      throw std::runtime_error("torch_tpu: the PJRT runtime is not configured (import torch_tpu)");
    init_runtime(path, options, host_memory);
  }
  return *g_client;
}

PJRT_Buffer_Type pjrt_type(ir::DType dtype) {
  using ir::DType;
  switch (dtype) {
    case DType::Bool:
      return PJRT_Buffer_Type_PRED;
    case DType::U8:
      return PJRT_Buffer_Type_U8;
    case DType::I8:
      return PJRT_Buffer_Type_S8;
    case DType::I16:
      return PJRT_Buffer_Type_S16;
    case DType::I32:
      return PJRT_Buffer_Type_S32;
    case DType::I64:
      return PJRT_Buffer_Type_S64;
    case DType::U16:
      return PJRT_Buffer_Type_U16;
    case DType::U32:
      return PJRT_Buffer_Type_U32;
    case DType::U64:
      return PJRT_Buffer_Type_U64;
    case DType::F16:
      return PJRT_Buffer_Type_F16;
    case DType::BF16:
      return PJRT_Buffer_Type_BF16;
    case DType::F32:
      return PJRT_Buffer_Type_F32;
    case DType::F64:
      return PJRT_Buffer_Type_F64;
    case DType::C64:
      return PJRT_Buffer_Type_C64;
    case DType::C128:
      return PJRT_Buffer_Type_C128;
    case DType::F8E4M3FN:
      return PJRT_Buffer_Type_F8E4M3FN;
    case DType::F8E5M2:
      return PJRT_Buffer_Type_F8E5M2;
    case DType::F8E4M3FNUZ:
      return PJRT_Buffer_Type_F8E4M3FNUZ;
    case DType::F8E5M2FNUZ:
      return PJRT_Buffer_Type_F8E5M2FNUZ;
    case DType::F8E8M0FNU:
      return PJRT_Buffer_Type_F8E8M0FNU;
  }
  return PJRT_Buffer_Type_INVALID;
}

namespace {
void count_upload(ir::DType dtype, const std::vector<int64_t>& dims) {
  int64_t n = ir::itemsize(dtype);
  for (int64_t d : dims) n *= d;
  counters().h2d_transfers++;
  counters().h2d_bytes += n;
}
}  // namespace

runtime::BufferPtr upload(const void* data, ir::DType dtype, const std::vector<int64_t>& dims, int device) {
  ScopedSpan span(SpanKind::Transfer, "host to device", device);
  count_upload(dtype, dims);
  return client().buffer_from_host(data, pjrt_type(dtype), dims, device);
}

runtime::BufferPtr upload_aliasing(const void* data, ir::DType dtype, const std::vector<int64_t>& dims,
                                   int device, std::shared_ptr<void> owner) {
  count_upload(dtype, dims);
  return client().buffer_aliasing_host(data, pjrt_type(dtype), dims, device, std::move(owner));
}

void download(const runtime::Buffer& buffer, void* dst, size_t nbytes) {
  ScopedSpan span(SpanKind::Transfer, "device to host");
  counters().d2h_transfers++;
  counters().d2h_bytes += nbytes;
  buffer.to_host(dst, nbytes);
}

namespace {

// Calls `row(real_offset, padded_offset)` (in elements) for every innermost row of a padded form.
template <typename F>
void for_each_row(const PaddedForm& form, F row) {
  const size_t rank = form.sizes.size();
  const int64_t length = rank ? form.sizes.back() : 1;
  int64_t rows = 1;
  for (size_t d = 0; d + 1 < rank; ++d) rows *= form.sizes[d];
  for (int64_t r = 0; r < rows; ++r) {
    int64_t rest = r, at = 0, stride = rank ? form.bounds.back() : 1;
    for (size_t d = rank - 1; d-- > 0;) {
      at += (rest % form.sizes[d]) * stride;
      rest /= form.sizes[d];
      stride *= form.bounds[d];
    }
    row(r * length, at, length);
  }
}

}  // namespace

runtime::BufferPtr upload_padded(const void* data, ir::DType dtype, const PaddedForm& form, int device) {
  const int itemsize = ir::itemsize(dtype);
  std::vector<uint8_t> whole(static_cast<size_t>(form.capacity() * itemsize), 0);
  const auto* in = static_cast<const uint8_t*>(data);
  for_each_row(form, [&](int64_t real, int64_t padded, int64_t n) {
    std::memcpy(whole.data() + padded * itemsize, in + real * itemsize, static_cast<size_t>(n * itemsize));
  });
  return upload(whole.data(), dtype, form.bounds, device);
}

void download_elements(const runtime::Buffer& buffer, const PaddedForm* form, int itemsize, void* dst,
                       size_t nbytes) {
  if (form == nullptr) return download(buffer, dst, nbytes);
  std::vector<uint8_t> whole(static_cast<size_t>(form->capacity() * itemsize));
  download(buffer, whole.data(), whole.size());
  auto* out = static_cast<uint8_t*>(dst);
  for_each_row(*form, [&](int64_t real, int64_t padded, int64_t n) {
    const size_t from = static_cast<size_t>(real * itemsize);
    if (from >= nbytes) return;
    const size_t count = std::min<size_t>(static_cast<size_t>(n * itemsize), nbytes - from);
    std::memcpy(out + from, whole.data() + padded * itemsize, count);
  });
}

Mode mode() { return g_mode.load(); }
void set_mode(Mode m) { g_mode.store(m); }

}  // namespace tpu::exec
