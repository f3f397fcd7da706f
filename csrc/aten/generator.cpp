#include "aten/generator.h"

#include <ATen/ops/empty.h>
#include <c10/core/TensorImpl.h>
#include <c10/util/CallOnce.h>

#include <cstring>
#include <deque>
#include <mutex>
#include <random>

#include "aten/tpu_tensor.h"

namespace tpu::aten {

TpuGeneratorImpl::TpuGeneratorImpl(c10::DeviceIndex device)
    : c10::GeneratorImpl(c10::Device(c10::DeviceType::PrivateUse1, device),
                         c10::DispatchKeySet(c10::DispatchKey::PrivateUse1)) {}

void TpuGeneratorImpl::set_current_seed(uint64_t seed) {
  seed_ = seed;
  offset_ = 0;
}

uint64_t TpuGeneratorImpl::seed() {
  uint64_t s = std::random_device{}();
  s = (s << 32) ^ std::random_device{}();
  set_current_seed(s);
  return s;
}

void TpuGeneratorImpl::set_state(const c10::TensorImpl& new_state) {
  TORCH_CHECK(new_state.numel() == 16 && new_state.dtype() == caffe2::TypeMeta::Make<uint8_t>(),
              "RNG state must be a torch.ByteTensor of 16 bytes (seed, offset)");
  const auto* bytes = static_cast<const uint8_t*>(new_state.data());
  std::memcpy(&seed_, bytes, 8);
  std::memcpy(&offset_, bytes + 8, 8);
}

c10::intrusive_ptr<c10::TensorImpl> TpuGeneratorImpl::get_state() const {
  at::Tensor state = at::empty({16}, at::TensorOptions().dtype(at::kByte));
  std::memcpy(state.data_ptr(), &seed_, 8);
  std::memcpy(static_cast<uint8_t*>(state.data_ptr()) + 8, &offset_, 8);
  return state.getIntrusivePtr();
}

std::pair<uint64_t, uint64_t> TpuGeneratorImpl::next(uint64_t count) {
  constexpr uint64_t kValuesPerCall = uint64_t{1} << 32;
  std::pair<uint64_t, uint64_t> r{seed_, offset_ << 30};
  offset_ += 4 * ((count + kValuesPerCall - 1) / kValuesPerCall);
  return r;
}

TpuGeneratorImpl* TpuGeneratorImpl::clone_impl() const {
  auto* g = new TpuGeneratorImpl(device().index());
  g->seed_ = seed_;
  g->offset_ = offset_;
  return g;
}

const at::Generator& default_generator(c10::DeviceIndex device) {
  static std::mutex mutex;
  static std::deque<at::Generator> generators;  // stable addresses
  std::lock_guard<std::mutex> lock(mutex);
  if (device < 0) device = current_device();
  while (static_cast<c10::DeviceIndex>(generators.size()) <= device)
    generators.push_back(
        at::make_generator<TpuGeneratorImpl>(static_cast<c10::DeviceIndex>(generators.size())));
  return generators[device];
}

}  // namespace tpu::aten
