#include "distributed/host_staging.h"

#include "aten/tpu_tensor.h"

#include <list>
#include <mutex>

namespace tpu::distributed {

namespace {

constexpr size_t kPoolBytes = size_t{256} << 20;

struct StagingPool {
  std::mutex mutex;
  std::list<at::Tensor> buffers;  // flat uint8, most recently used first
  size_t bytes = 0;

  at::Tensor take(size_t nbytes) {
    std::lock_guard<std::mutex> lock(mutex);
    for (auto it = buffers.begin(); it != buffers.end(); ++it) {
      // use_count 1: only the pool holds the storage, no collective is using it.
      if (static_cast<size_t>(it->numel()) == nbytes && it->storage().use_count() == 1) {
        buffers.splice(buffers.begin(), buffers, it);
        return buffers.front();
      }
    }
    at::Tensor fresh = at::empty({static_cast<int64_t>(nbytes)}, at::kByte);
    buffers.push_front(fresh);
    bytes += nbytes;
    while (bytes > kPoolBytes && buffers.size() > 1) {
      bytes -= buffers.back().numel();
      buffers.pop_back();  // a buffer still in use lives on with its users
    }
    return fresh;
  }
};

StagingPool& pool() {
  static auto* p = new StagingPool();  // never destroyed: collectives may run during exit
  return *p;
}

}  // namespace

at::Tensor staging_tensor(at::IntArrayRef sizes, at::ScalarType dtype) {
  int64_t numel = c10::multiply_integers(sizes);
  size_t nbytes = static_cast<size_t>(numel) * c10::elementSize(dtype);
  if (nbytes < (size_t{64} << 10))
    return at::empty(sizes, at::TensorOptions().dtype(dtype));  // malloc's heap
  return pool().take(nbytes).view(dtype).view(sizes);
}

at::ScalarType reduction_staging_type(at::ScalarType t) {
  switch (t) {
    case at::kShort:
    case at::kUInt16:
      return at::kInt;
    case at::kUInt32:
      return at::kLong;
    default:
      return t;
  }
}

at::Tensor to_host(const at::Tensor& t, at::ScalarType as) {
  at::Tensor host = staging_tensor(t.sizes(), as);
  host.copy_(t);  // downloads straight into it when the dtype is the same
  return host;
}

at::Tensor bytes(const at::Tensor& host) { return host.reshape({-1}).view(at::kByte); }

at::Tensor to_host_bytes(const at::Tensor& t) { return bytes(to_host(t, t.scalar_type())); }

at::Tensor host_like(const at::Tensor& t, at::ScalarType as) { return staging_tensor(t.sizes(), as); }

std::vector<at::Tensor> to_host(const std::vector<at::Tensor>& ts, at::ScalarType as) {
  std::vector<at::Tensor> out;
  out.reserve(ts.size());
  for (const at::Tensor& t : ts) out.push_back(to_host(t, as));
  return out;
}

void copy_back(const std::vector<at::Tensor>& dst, const std::vector<at::Tensor>& host) {
  // The staging tensors are not written again: the results may keep their memory (a pool buffer
  // stays out of the pool while a device buffer uses it).
  for (size_t i = 0; i < dst.size(); ++i) aten::adopt_host_tensor(dst[i], host[i]);
}

}  // namespace tpu::distributed
