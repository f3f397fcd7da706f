// The tpu random generator: a (seed, offset) pair. Random ops take it as a runtime input to a
// counter-based generator (rng_bit_generator), so every call reuses one executable and seeded
// runs reproduce in every execution mode.
#pragma once
#include <ATen/core/Generator.h>
#include <c10/core/GeneratorImpl.h>

namespace tpu::aten {

class TpuGeneratorImpl : public c10::GeneratorImpl {
 public:
  explicit TpuGeneratorImpl(c10::DeviceIndex device);
  void set_current_seed(uint64_t seed) override;
  uint64_t current_seed() const override { return seed_; }
  uint64_t seed() override;
  void set_offset(uint64_t offset) override { offset_ = offset; }
  uint64_t get_offset() const override { return offset_; }
  // State: 16 bytes, seed then offset (little-endian uint64s) in a CPU uint8 tensor.
  void set_state(const c10::TensorImpl& new_state) override;
  c10::intrusive_ptr<c10::TensorImpl> get_state() const override;
  // Returns the rng_bit_generator state (seed, counter) for a call drawing `count` values, and
  // advances the offset as CUDA's Philox offset advances: by 4 for a call of up to 2^32 values.
  // Code written for CUDA counts on that (vLLM steps a discarded sample's generator back by 4);
  // a unit of offset is 2^30 counters, so calls never draw overlapping numbers.
  std::pair<uint64_t, uint64_t> next(uint64_t count);
  static c10::DeviceType device_type() { return c10::DeviceType::PrivateUse1; }

 private:
  TpuGeneratorImpl* clone_impl() const override;
  uint64_t seed_ = 67280421310721ULL;
  uint64_t offset_ = 0;
};

const at::Generator& default_generator(c10::DeviceIndex device);

}  // namespace tpu::aten
