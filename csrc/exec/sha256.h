// SHA-256 (FIPS 180-4), self-contained: names and checks persistent compile cache entries.
#pragma once
#include <array>
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

namespace tpu::exec {

class Sha256 {
 public:
  using Digest = std::array<uint8_t, 32>;
  Sha256();
  void update(const void* data, size_t size);
  void update(std::string_view s) { update(s.data(), s.size()); }
  // The digest of everything passed to update(); the object must not be used afterwards.
  Digest finish();

 private:
  void block(const uint8_t* p);
  uint32_t state_[8];
  uint8_t buffer_[64];
  size_t buffered_ = 0;
  uint64_t total_bytes_ = 0;
};

Sha256::Digest sha256(std::string_view data);
// Lower-case hex of `digest`.
std::string to_hex(const Sha256::Digest& digest);

}  // namespace tpu::exec
