// Which bound a dynamic dimension is compiled for (docs/dynamic_shapes.md): `minimum` (128, the
// width of a TPU tile) or the next power of two above it (so at most twice the real size), or
// above `granule` (when set) the next multiple of it (at most granule - 1 elements of padding). Every size of
// one bucket shares one program. TORCH_TPU_DYNAMIC=0 turns dynamic dimensions off (every shape compiles its
// own programs); TORCH_TPU_BUCKETS="minimum[,granule]" sets the policy; torch_tpu.dynamism does both from
// Python.
#pragma once
#include <cstdint>

namespace tpu::exec {

struct BucketPolicy {
  int64_t minimum = 128;
  int64_t granule = 0;  // 0: powers of two all the way
};

bool dynamic_shapes_enabled();
void set_dynamic_shapes_enabled(bool on);
BucketPolicy bucket_policy();
// Throws std::invalid_argument for a minimum below 1 or a negative granule.
void set_bucket_policy(const BucketPolicy& policy);
// The bound compiled for a dynamic dimension of real size n.
int64_t bucket(int64_t n);

}  // namespace tpu::exec
