// torch_tpu::bincount(self[, weights]): counts (or weight sums) of each value of a 1-D
// non-negative integer tensor. The result length (max + 1, at least minlength) was read on the
// host by the bincount kernel (csrc/aten/dynamic_shape_kernels.cpp); here it is a scatter-add.
#include "lowering/core/index_util.h"
#include "lowering/core/registry.h"

namespace tpu::lowering {

namespace {

using ir::Type;
using ir::Value;

template <bool Weighted>
std::vector<Value> lower_bincount(Ctx& c) {
  const ir::Type& out = c.out();
  const Value& self = c.tensor("self");
  Value zeros = hlo::full(c.b, out, 0);
  if (self.type.numel() == 0 || out.numel() == 0) return {zeros};
  Value ones = Weighted ? hlo::convert(c.b, c.tensor("weights"), out.dtype)
                        : hlo::full(c.b, Type{out.dtype, self.shape()}, 1);
  return {idx::scatter_along(c.b, zeros, 0, self, ones, hlo::Combiner::Add)};
}

}  // namespace

TPU_LOWERING("torch_tpu::bincount", lower_bincount<false>, reads({"self"}));
TPU_LOWERING("torch_tpu::bincount_weighted", lower_bincount<true>, reads({"self", "weights"}));

}  // namespace tpu::lowering
