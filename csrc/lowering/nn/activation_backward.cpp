// Backward kernels of the activations, as the explicit ATen ops autograd calls
// (threshold_backward for relu, gelu_backward, ...). The formulas and boundary conventions
// are CPU's: e.g. hardtanh passes no gradient at the clip points themselves. Where CPU's
// scalar and vectorized loops disagree on NaN inputs, the vectorized one (what tensors of
// any size mostly run) is followed; the select conditions below are written accordingly.
#include <cmath>

#include "lowering/core/elementwise_ops.h"
#include "lowering/special/special_math.h"

namespace tpu::lowering {
namespace {

using namespace ew;  // NOLINT
using ir::Builder;
using ir::Value;
using Vs = std::vector<Value>;

// threshold_backward(grad, self, threshold) = self <= threshold ? 0 : grad
Vs lower_threshold_backward(Ctx& ctx) {
  return compute_exact(ctx, {"grad_output", "self", "threshold"}, [](Builder& b, const Vs& x) {
    return hlo::select(b, hlo::compare(b, x[1], x[2], "LE"), cst(b, x[0], 0), x[0]);
  });
}

constexpr double kSqrt1_2 = 0.70710678118654752440;
constexpr double kInvSqrt2Pi = 0.39894228040143267794;    // 1 / sqrt(2 pi)
constexpr double kGeluTanhBeta = 0.79788456080286535588;  // sqrt(2 / pi)
constexpr double kGeluTanhKappa = 0.044715;

// d/dx gelu: Phi(x) + x phi(x); for the tanh form, the derivative of
// x/2 (1 + tanh(inner)) with inner = beta (x + kappa x^3).
Vs lower_gelu_backward(Ctx& ctx) {
  bool tanh_approx = ctx.has("approximate") && ctx.arg("approximate").s == "tanh";
  return compute(ctx, {"grad_output", "self"}, [tanh_approx](Builder& b, const Vs& v) {
    const Value &dy = v[0], &x = v[1];
    Value x2 = hlo::mul(b, x, x);
    if (tanh_approx) {
      Value inner = mul_c(b, hlo::add(b, x, mul_c(b, hlo::mul(b, x2, x), kGeluTanhKappa)), kGeluTanhBeta);
      Value t = tanh(b, inner);
      Value left_derivative = mul_c(b, add_c(b, t, 1), 0.5);
      Value tanh_derivative = hlo::sub(b, cst(b, t, 1), hlo::mul(b, t, t));
      Value inner_derivative = mul_c(b, add_c(b, mul_c(b, x2, 3 * kGeluTanhKappa), 1), kGeluTanhBeta);
      Value right_derivative = hlo::mul(b, hlo::mul(b, mul_c(b, x, 0.5), tanh_derivative), inner_derivative);
      return hlo::mul(b, dy, hlo::add(b, left_derivative, right_derivative));
    }
    Value cdf = mul_c(b, add_c(b, special::erf(b, mul_c(b, x, kSqrt1_2)), 1), 0.5);
    Value pdf = mul_c(b, exp(b, mul_c(b, x2, -0.5)), kInvSqrt2Pi);
    return hlo::mul(b, dy, hlo::add(b, cdf, hlo::mul(b, x, pdf)));
  });
}

// leaky_relu_backward(grad, self, slope, self_is_result) = self > 0 ? grad : grad * slope
Vs lower_leaky_relu_backward(Ctx& ctx) {
  return compute(ctx, {"grad_output", "self", "negative_slope"}, [](Builder& b, const Vs& x) {
    return hlo::select(b, gt(b, x[1], 0), x[0], hlo::mul(b, x[0], x[2]));
  });
}

// elu_backward(grad, alpha, scale, input_scale, is_result, self_or_result): from the result
// y when is_result (dy/dx = input_scale (y + alpha scale) for y <= 0), else from x.
Vs lower_elu_backward(Ctx& ctx) {
  bool is_result = ctx.bool_arg("is_result");
  return compute(ctx, {"grad_output", "alpha", "scale", "input_scale", "self_or_result"},
                 [is_result](Builder& b, const Vs& v) {
                   const Value &g = v[0], &alpha = v[1], &scale = v[2], &input_scale = v[3], &y = v[4];
                   Value negcoef = hlo::mul(b, alpha, scale);
                   Value neg = is_result ? hlo::mul(b, hlo::mul(b, g, input_scale), hlo::add(b, y, negcoef))
                                         : hlo::mul(b, hlo::mul(b, hlo::mul(b, g, input_scale), negcoef),
                                                    exp(b, hlo::mul(b, y, input_scale)));
                   return hlo::select(b, gt(b, y, 0), hlo::mul(b, g, scale), neg);  // NaN -> NaN
                 });
}

// softplus_backward(grad, self, beta, threshold): grad * sigmoid(x beta) below the threshold.
Vs lower_softplus_backward(Ctx& ctx) {
  return compute(ctx, {"grad_output", "self", "beta", "threshold"}, [](Builder& b, const Vs& v) {
    Value xb = hlo::mul(b, v[1], v[2]);
    Value z = exp(b, xb);
    Value soft = hlo::div(b, hlo::mul(b, v[0], z), add_c(b, z, 1));
    return hlo::select(b, hlo::compare(b, xb, v[3], "GT"), v[0], soft);
  });
}

// hardtanh_backward(grad, self, min, max) = min < self < max ? grad : 0 (NaN -> 0)
Vs lower_hardtanh_backward(Ctx& ctx) {
  return compute_exact(ctx, {"grad_output", "self", "min_val", "max_val"}, [](Builder& b, const Vs& v) {
    Value inside = and_(b, hlo::compare(b, v[1], v[2], "GT"), hlo::compare(b, v[1], v[3], "LT"));
    return hlo::select(b, inside, v[0], cst(b, v[0], 0));
  });
}

// From the forward result y: sigmoid' = (1 - y) y, tanh' = 1 - y^2.
Vs lower_sigmoid_backward(Ctx& ctx) {
  return compute(ctx, {"grad_output", "output"}, [](Builder& b, const Vs& v) {
    return hlo::mul(b, hlo::mul(b, v[0], hlo::sub(b, cst(b, v[1], 1), v[1])), v[1]);
  });
}
Vs lower_tanh_backward(Ctx& ctx) {
  return compute(ctx, {"grad_output", "output"}, [](Builder& b, const Vs& v) {
    return hlo::mul(b, v[0], hlo::sub(b, cst(b, v[1], 1), hlo::mul(b, v[1], v[1])));
  });
}

// hardsigmoid' = 1/6 strictly inside (-3, 3).
Vs lower_hardsigmoid_backward(Ctx& ctx) {
  return compute(ctx, {"grad_output", "self"}, [](Builder& b, const Vs& v) {
    Value inside = and_(b, gt(b, v[1], -3), lt(b, v[1], 3));
    return hlo::select(b, inside, mul_c(b, v[0], 1.0 / 6), cst(b, v[0], 0));
  });
}

// hardswish' = 0 up to -3 (inclusive), x/3 + 1/2 in between, 1 from 3 on (NaN -> NaN).
Vs lower_hardswish_backward(Ctx& ctx) {
  return compute(ctx, {"grad_output", "self"}, [](Builder& b, const Vs& v) {
    const Value &g = v[0], &x = v[1];
    Value mid = hlo::mul(b, g, add_c(b, hlo::div(b, x, cst(b, x, 3)), 0.5));
    Value r = hlo::select(b, ge(b, x, 3), g, mid);
    return hlo::select(b, le(b, x, -3), cst(b, g, 0), r);
  });
}

// logit_backward(grad, self, eps) = grad / (x (1 - x)); without eps NaN outside [0, 1], with
// it 0 outside [eps, 1 - eps] (NaN -> 0). In the tensor's own dtype, like CPU, so that
// 1 - eps rounds as there.
Vs lower_logit_backward(Ctx& ctx) {
  return compute_exact(ctx, {"grad_output", "self", "eps"}, [](Builder& b, const Vs& v) {
    const Value &g = v[0], &x = v[1], &eps = v[2];
    Value r = hlo::div(b, g, hlo::mul(b, x, hlo::sub(b, cst(b, x, 1), x)));
    if (!eps.valid()) {
      Value outside = or_(b, lt(b, x, 0), gt(b, x, 1));
      return hlo::select(b, outside, cst(b, x, std::nan("")), r);
    }
    Value hi = hlo::sub(b, cst(b, eps, 1), eps);
    Value inside = and_(b, hlo::compare(b, x, eps, "GE"), hlo::compare(b, x, hi, "LE"));
    return hlo::select(b, inside, r, cst(b, x, 0));
  });
}

// The incoming gradient's schema name: softshrink_backward calls it grad_output,
// hardshrink_backward grad_out.
constexpr char kGradOutput[] = "grad_output";
constexpr char kGradOut[] = "grad_out";

// softshrink/hardshrink backward: the gradient passes outside [-lambd, lambd] (NaN -> 0).
template <const char* Grad>
Vs lower_shrink_backward(Ctx& ctx) {
  return compute_exact(ctx, {Grad, "self", "lambd"}, [](Builder& b, const Vs& v) {
    Value outside = or_(b, hlo::compare(b, v[1], hlo::neg(b, v[2]), "LT"), hlo::compare(b, v[1], v[2], "GT"));
    return hlo::select(b, outside, v[0], cst(b, v[0], 0));
  });
}

// log_sigmoid_backward(grad, self, buffer = exp(-|x|)):
// grad * (x < 0 ? 1 - z / (1 + z) : z / (1 + z)).
Vs lower_log_sigmoid_backward(Ctx& ctx) {
  return compute(ctx, {"grad_output", "self", "buffer"}, [](Builder& b, const Vs& v) {
    const Value &g = v[0], &x = v[1], &z = v[2];
    Value q = hlo::div(b, z, add_c(b, z, 1));
    Value neg = lt(b, x, 0);
    Value max_deriv = hlo::select(b, neg, cst(b, x, 1), cst(b, x, 0));
    Value sign = hlo::select(b, neg, cst(b, x, 1), cst(b, x, -1));
    return hlo::mul(b, hlo::sub(b, max_deriv, hlo::mul(b, sign, q)), g);
  });
}

// silu_backward and mish_backward also have CompositeImplicitAutograd decompositions, but CPU
// runs fused kernels in f32 for bf16/f16; decomposed op by op in bf16 the gradient would round
// at every step. sigmoid = 1 / (1 + exp(-x)), as CPU writes it.
Value cpu_sigmoid(Builder& b, const Value& x) {
  return hlo::div(b, cst(b, x, 1), add_c(b, exp(b, hlo::neg(b, x)), 1));
}

// silu' = s (1 + x (1 - s))
Vs lower_silu_backward(Ctx& ctx) {
  return compute(ctx, {"grad_output", "self"}, [](Builder& b, const Vs& v) {
    const Value &dy = v[0], &x = v[1];
    Value s = cpu_sigmoid(b, x);
    Value inner = add_c(b, hlo::mul(b, x, hlo::sub(b, cst(b, s, 1), s)), 1);
    return hlo::mul(b, hlo::mul(b, dy, s), inner);
  });
}

// mish' = t + x s (1 - t^2), t = tanh(softplus(x))
Vs lower_mish_backward(Ctx& ctx) {
  return compute(ctx, {"grad_output", "self"}, [](Builder& b, const Vs& v) {
    const Value &dy = v[0], &x = v[1];
    Value s = cpu_sigmoid(b, x);
    Value t = tanh(b, log1p(b, exp(b, x)));
    Value d = hlo::mul(b, hlo::mul(b, x, s), hlo::sub(b, cst(b, t, 1), hlo::mul(b, t, t)));
    return hlo::mul(b, dy, hlo::add(b, t, d));
  });
}

}  // namespace

TPU_LOWERING("aten::silu_backward", lower_silu_backward, reads({"grad_output", "self"}));
TPU_LOWERING("aten::mish_backward", lower_mish_backward, reads({"grad_output", "self"}));
TPU_LOWERING("aten::threshold_backward", lower_threshold_backward,
             reads({"grad_output", "self", "threshold"}));
TPU_LOWERING("aten::gelu_backward", lower_gelu_backward, reads({"grad_output", "self", "approximate"}));
TPU_LOWERING("aten::leaky_relu_backward", lower_leaky_relu_backward,
             reads({"grad_output", "self", "negative_slope"}));
TPU_LOWERING("aten::elu_backward", lower_elu_backward,
             reads({"grad_output", "alpha", "scale", "input_scale", "is_result", "self_or_result"}));
TPU_LOWERING("aten::softplus_backward", lower_softplus_backward,
             reads({"grad_output", "self", "beta", "threshold"}));
TPU_LOWERING("aten::hardtanh_backward", lower_hardtanh_backward,
             reads({"grad_output", "self", "min_val", "max_val"}));
TPU_LOWERING("aten::sigmoid_backward", lower_sigmoid_backward, reads({"grad_output", "output"}));
TPU_LOWERING("aten::tanh_backward", lower_tanh_backward, reads({"grad_output", "output"}));
TPU_LOWERING("aten::hardsigmoid_backward", lower_hardsigmoid_backward, reads({"grad_output", "self"}));
TPU_LOWERING("aten::hardswish_backward", lower_hardswish_backward, reads({"grad_output", "self"}));
TPU_LOWERING("aten::logit_backward", lower_logit_backward, reads({"grad_output", "self", "eps"}));
TPU_LOWERING("aten::softshrink_backward", lower_shrink_backward<kGradOutput>,
             reads({"grad_output", "self", "lambd"}));
TPU_LOWERING("aten::hardshrink_backward", lower_shrink_backward<kGradOut>,
             reads({"grad_out", "self", "lambd"}));
TPU_LOWERING("aten::log_sigmoid_backward", lower_log_sigmoid_backward,
             reads({"grad_output", "self", "buffer"}));

}  // namespace tpu::lowering
