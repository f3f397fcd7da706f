// glu(x, dim) = a * sigmoid(b) for the halves (a, b) of x along dim, and glu_backward.
// f16/bf16 compute in f32 (CPU's opmath) and round once.
#include "lowering/core/elementwise_ops.h"
#include "lowering/core/hlo.h"
#include "lowering/core/registry.h"

namespace tpu::lowering {

namespace {

using ir::Builder;
using ir::Value;

struct Halves {
  Value a, b;
};

Halves halves(Builder& b, const Value& x, int64_t dim) {
  int d = static_cast<int>(hlo::wrap_dim(dim, x.rank()));
  int64_t h = x.dim(d) / 2;
  return {hlo::slice_dim(b, x, d, 0, h), hlo::slice_dim(b, x, d, h, 2 * h)};
}

// glu: the first half of `dim` times the sigmoid of the second.
std::vector<Value> lower_glu(Ctx& c) {
  Builder& b = c.b;
  require_real(c.tensor("self").dtype());
  Value x = hlo::convert(b, c.tensor("self"), compute_dtype(c.out().dtype));
  Halves h = halves(b, x, c.int_arg("dim"));
  return {finish(c, hlo::mul(b, h.a, ew::sigmoid(b, h.b)))};
}

// glu_backward(grad_output, self, dim): (g * sig(b), g * a * sig(b) * (1 - sig(b)))
// concatenated along dim.
std::vector<Value> lower_glu_backward(Ctx& c) {
  Builder& b = c.b;
  const ir::DType t = compute_dtype(c.out().dtype);
  Value g = hlo::convert(b, c.tensor("grad_output"), t);
  Value x = hlo::convert(b, c.tensor("self"), t);
  int d = static_cast<int>(hlo::wrap_dim(c.int_arg("dim"), x.rank()));
  Halves h = halves(b, x, d);
  Value sig = ew::sigmoid(b, h.b);
  Value one_minus = hlo::sub(b, hlo::scalar_like(b, sig, 1), sig);
  Value ga = hlo::mul(b, sig, g);
  Value gb = hlo::mul(b, hlo::mul(b, hlo::mul(b, one_minus, sig), h.a), g);
  return {finish(c, hlo::concatenate(b, {ga, gb}, d))};
}

}  // namespace

TPU_LOWERING("aten::glu", lower_glu, reads({"self", "dim"}));
TPU_LOWERING("aten::glu_backward", lower_glu_backward, reads({"grad_output", "self", "dim"}));

}  // namespace tpu::lowering
