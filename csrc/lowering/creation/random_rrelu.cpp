// Randomized leaky ReLU (F.rrelu): rrelu_with_noise and its in-place and functional forms.
// Training: each element x <= 0 gets a slope r uniform in [lower, upper] (out = x * r, noise =
// r), every other element passes through with noise 1, as CPU's kernel does; the backward
// (rrelu_with_noise_backward, composite) multiplies by the noise. Evaluation: leaky_relu with
// slope (lower + upper) / 2, noise untouched.
#include "lowering/core/elementwise_ops.h"
#include "lowering/creation/random_bits.h"

namespace tpu::lowering {

namespace {

using ir::Builder;
using ir::DType;
using ir::Value;

// (out, noise) of rrelu_with_noise(self, noise, lower, upper, training, generator).
std::pair<Value, Value> rrelu(Ctx& c, const ir::Type& out_type, const ir::Type& noise_type) {
  Builder& b = c.b;
  const DType st = compute_dtype(out_type.dtype);
  Value x = hlo::convert(b, c.tensor("self"), st);
  const ir::Shape& shape = x.shape();
  Value lower = operand(c, "lower", st, shape), upper = operand(c, "upper", st, shape);
  Value positive = hlo::compare(b, x, ew::cst(b, x, 0), "GT");
  Value slope, noise = c.tensor("noise");
  if (c.bool_arg("training")) {
    Value u = uniform01(b, c.rng_state, shape, st == DType::F64 ? DType::F64 : DType::F32);
    Value r = hlo::add(b, lower, hlo::mul(b, hlo::convert(b, u, st), hlo::sub(b, upper, lower)));
    slope = r;
    noise = hlo::reshape(b, hlo::select(b, positive, ew::cst(b, r, 1), r), noise_type.shape);
  } else {
    // The mean slope in double, rounded once to the compute type (CPU's Scalar conversion).
    Value l = hlo::convert(b, c.tensor("lower"), DType::F64),
          h = hlo::convert(b, c.tensor("upper"), DType::F64);
    slope = hlo::broadcast_to(b, hlo::convert(b, ew::mul_c(b, hlo::add(b, l, h), 0.5), st), shape);
  }
  Value out = hlo::select(b, positive, x, hlo::mul(b, x, slope));
  return {hlo::convert(b, out, out_type.dtype), hlo::convert(b, noise, noise_type.dtype)};
}

// rrelu_with_noise: results (noise written, out); rrelu_with_noise.out writes the same two, in
// the same (schema) order.
std::vector<Value> lower_rrelu_with_noise(Ctx& c) {
  auto [out, noise] = rrelu(c, c.out(1), c.out(0));
  return {noise, out};
}

// rrelu_with_noise_: results (self written, noise written).
std::vector<Value> lower_rrelu_with_noise_(Ctx& c) {
  auto [out, noise] = rrelu(c, c.out(0), c.out(1));
  return {out, noise};
}

// rrelu_with_noise_functional: returns (out, noise_out).
std::vector<Value> lower_rrelu_with_noise_functional(Ctx& c) { return lower_rrelu_with_noise_(c); }

}  // namespace

TPU_LOWERING("aten::rrelu_with_noise", lower_rrelu_with_noise,
             reads({"self", "noise", "lower", "upper", "training"}));
TPU_LOWERING("aten::rrelu_with_noise.out", lower_rrelu_with_noise,
             reads({"self", "noise", "lower", "upper", "training"}));
TPU_LOWERING("aten::rrelu_with_noise_", lower_rrelu_with_noise_,
             reads({"self", "noise", "lower", "upper", "training"}));
TPU_LOWERING("aten::rrelu_with_noise_functional", lower_rrelu_with_noise_functional,
             reads({"self", "noise", "lower", "upper", "training"}));

}  // namespace tpu::lowering
