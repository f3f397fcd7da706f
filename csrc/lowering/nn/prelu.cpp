// PReLU's kernels: _prelu_kernel(x, w) = x > 0 ? x : w * x, with w already shaped to broadcast
// against x (the prelu composite reshapes it), and its backward, whose two gradients both have
// the broadcast shape (autograd sums the weight's down to its shape).
#include "lowering/core/elementwise_ops.h"
#include "lowering/core/hlo.h"
#include "lowering/core/registry.h"

namespace tpu::lowering {

namespace {

using ir::Builder;
using ir::Value;

// _prelu_kernel(self, weight)
std::vector<Value> lower_prelu(Ctx& c) {
  return ew::compute(c, {"self", "weight"}, [](Builder& b, const std::vector<Value>& v) {
    Value pos = hlo::compare(b, v[0], hlo::scalar_like(b, v[0], 0), "GT");
    return hlo::select(b, pos, v[0], hlo::mul(b, v[1], v[0]));
  });
}

// _prelu_kernel_backward(grad_output, self, weight) -> (grad_self, grad_weight)
std::vector<Value> lower_prelu_backward(Ctx& c) {
  Builder& b = c.b;
  const ir::DType t = compute_dtype(c.out(0).dtype);
  require_real(t);
  const ir::Shape& s = c.out(0).shape;
  Value g = hlo::broadcast_to(b, hlo::convert(b, c.tensor("grad_output"), t), s);
  Value x = hlo::broadcast_to(b, hlo::convert(b, c.tensor("self"), t), s);
  Value w = hlo::broadcast_to(b, hlo::convert(b, c.tensor("weight"), t), s);
  Value pos = hlo::compare(b, x, hlo::scalar_like(b, x, 0), "GT");
  Value zero = hlo::full(b, x.type, 0);
  Value gx = hlo::select(b, pos, g, hlo::mul(b, w, g));
  Value gw = hlo::select(b, pos, zero, hlo::mul(b, x, g));
  return {finish(c, gx, 0), finish(c, gw, 1)};
}

}  // namespace

TPU_LOWERING("aten::_prelu_kernel", lower_prelu, reads({"self", "weight"}));
TPU_LOWERING("aten::_prelu_kernel_backward", lower_prelu_backward, reads({"grad_output", "self", "weight"}));

}  // namespace tpu::lowering
