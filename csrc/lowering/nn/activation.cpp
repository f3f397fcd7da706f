// Activation functions (forward): relu, threshold, gelu, silu, mish, leaky_relu, elu, softplus,
// hardtanh, hardsigmoid, hardswish, logit, softshrink, hardshrink, log_sigmoid, heaviside, sinc.
// Formulas and comparison directions follow PyTorch's CPU kernels, so boundary points
// (x == threshold, x == 0) and NaN inputs give the same results.
#include <cmath>

#include "lowering/core/elementwise_ops.h"
#include "lowering/special/special_math.h"

namespace tpu::lowering {
namespace {

using namespace ew;  // NOLINT
using ir::Builder;
using ir::Value;
using Vs = std::vector<Value>;

Vs lower_relu(Ctx& ctx) {
  return compute_exact(ctx, {"self"},
                       [](Builder& b, const Vs& x) { return maximum(b, x[0], cst(b, x[0], 0)); });
}

// threshold(x, threshold, value) = x <= threshold ? value : x
Vs lower_threshold(Ctx& ctx) {
  return compute_exact(ctx, {"self", "threshold", "value"}, [](Builder& b, const Vs& x) {
    return hlo::select(b, hlo::compare(b, x[0], x[1], "LE"), x[2], x[0]);
  });
}

// gelu: x/2 (1 + erf(x / sqrt 2)), or with approximate="tanh"
// x/2 (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3))).
constexpr double kSqrt1_2 = 0.70710678118654752440;
constexpr double kGeluTanhBeta = 0.79788456080286535588;  // sqrt(2 / pi)
constexpr double kGeluTanhKappa = 0.044715;

Vs lower_gelu(Ctx& ctx) {
  bool tanh_approx = ctx.has("approximate") && ctx.arg("approximate").s == "tanh";
  return compute(ctx, {"self"}, [tanh_approx](Builder& b, const Vs& v) {
    const Value& x = v[0];
    if (tanh_approx) {
      Value cube = hlo::mul(b, hlo::mul(b, x, x), x);
      Value inner = mul_c(b, hlo::add(b, x, mul_c(b, cube, kGeluTanhKappa)), kGeluTanhBeta);
      return hlo::mul(b, mul_c(b, x, 0.5), add_c(b, tanh(b, inner), 1));
    }
    Value cdf = add_c(b, special::erf(b, mul_c(b, x, kSqrt1_2)), 1);
    return hlo::mul(b, mul_c(b, x, 0.5), cdf);
  });
}

// silu = x / (1 + exp(-x)), mish = x tanh(log1p(exp(x))) (CPU's formulas).
Vs lower_silu(Ctx& ctx) {
  return compute(ctx, {"self"}, [](Builder& b, const Vs& x) {
    return hlo::div(b, x[0], add_c(b, exp(b, hlo::neg(b, x[0])), 1));
  });
}
Vs lower_mish(Ctx& ctx) {
  return compute(ctx, {"self"},
                 [](Builder& b, const Vs& x) { return hlo::mul(b, x[0], tanh(b, log1p(b, exp(b, x[0])))); });
}

Vs lower_leaky_relu(Ctx& ctx) {
  return compute(ctx, {"self", "negative_slope"}, [](Builder& b, const Vs& x) {
    return hlo::select(b, gt(b, x[0], 0), x[0], hlo::mul(b, x[0], x[1]));
  });
}

// elu(x, alpha, scale, input_scale) = x <= 0 ? expm1(x input_scale) alpha scale : x scale
Vs lower_elu(Ctx& ctx) {
  return compute(ctx, {"self", "alpha", "scale", "input_scale"}, [](Builder& b, const Vs& x) {
    Value negcoef = hlo::mul(b, x[1], x[2]);
    Value neg = hlo::mul(b, expm1(b, hlo::mul(b, x[0], x[3])), negcoef);
    return hlo::select(b, le(b, x[0], 0), neg, hlo::mul(b, x[0], x[2]));
  });
}

// softplus(x, beta, threshold) = x beta > threshold ? x : log1p(exp(x beta)) / beta
Vs lower_softplus(Ctx& ctx) {
  return compute(ctx, {"self", "beta", "threshold"}, [](Builder& b, const Vs& x) {
    Value xb = hlo::mul(b, x[0], x[1]);
    Value soft = hlo::div(b, log1p(b, exp(b, xb)), x[1]);
    return hlo::select(b, hlo::compare(b, xb, x[2], "GT"), x[0], soft);
  });
}

Vs lower_hardtanh(Ctx& ctx) {
  return compute_exact(ctx, {"self", "min_val", "max_val"},
                       [](Builder& b, const Vs& x) { return minimum(b, maximum(b, x[0], x[1]), x[2]); });
}

// relu6(x + 3) / 6, and x times it.
Value hardsigmoid(Builder& b, const Value& x) {
  Value r6 = minimum(b, maximum(b, add_c(b, x, 3), cst(b, x, 0)), cst(b, x, 6));
  return hlo::div(b, r6, cst(b, x, 6));
}
Vs lower_hardsigmoid(Ctx& ctx) {
  return compute(ctx, {"self"}, [](Builder& b, const Vs& x) { return hardsigmoid(b, x[0]); });
}
Vs lower_hardswish(Ctx& ctx) {
  return compute(ctx, {"self"}, [](Builder& b, const Vs& x) {
    Value r6 = minimum(b, maximum(b, add_c(b, x[0], 3), cst(b, x[0], 0)), cst(b, x[0], 6));
    return hlo::div(b, hlo::mul(b, x[0], r6), cst(b, x[0], 6));
  });
}

// logit(x, eps) = log(z / (1 - z)), z = x clamped to [eps, 1 - eps] when eps is given. In the
// tensor's own dtype: CPU rounds 1 - eps and z / (1 - z) to it (1 - 1e-3 is 1 in bf16).
Vs lower_logit(Ctx& ctx) {
  return compute_exact(ctx, {"self", "eps"}, [](Builder& b, const Vs& x) {
    Value z = x[0];
    if (x[1].valid()) {
      Value hi = hlo::sub(b, cst(b, x[1], 1), x[1]);
      z = hlo::select(b, hlo::compare(b, z, x[1], "LT"), x[1],
                      hlo::select(b, hlo::compare(b, z, hi, "GT"), hi, z));
    }
    return log(b, hlo::div(b, z, hlo::sub(b, cst(b, z, 1), z)));
  });
}

// softshrink: x -+ lambd outside [-lambd, lambd], else 0 (x * 0 keeps NaN).
Vs lower_softshrink(Ctx& ctx) {
  return compute(ctx, {"self", "lambd"}, [](Builder& b, const Vs& x) {
    const Value &v = x[0], &l = x[1];
    Value inner = hlo::select(b, hlo::compare(b, v, hlo::neg(b, l), "LT"), hlo::add(b, v, l), mul_c(b, v, 0));
    return hlo::select(b, hlo::compare(b, v, l, "GT"), hlo::sub(b, v, l), inner);
  });
}
Vs lower_hardshrink(Ctx& ctx) {
  return compute_exact(ctx, {"self", "lambd"}, [](Builder& b, const Vs& x) {
    Value inside = and_(b, hlo::compare(b, x[0], hlo::neg(b, x[1]), "GE"), hlo::compare(b, x[0], x[1], "LE"));
    return hlo::select(b, inside, cst(b, x[0], 0), x[0]);
  });
}

// log_sigmoid_forward -> (min(x, 0) - log1p(exp(-|x|)), buffer = exp(-|x|)), CPU's buffer.
Vs lower_log_sigmoid_forward(Ctx& ctx) {
  Builder& b = ctx.b;
  Value x = operand_like_out(ctx, "self", compute_dtype(ctx.out(0).dtype));
  Value z = exp(b, hlo::neg(b, abs(b, x)));
  Value out = hlo::sub(b, minimum(b, x, cst(b, x, 0)), log1p(b, z));
  return {finish(ctx, out, 0), finish(ctx, z, 1)};
}

// heaviside(x, values) = x == 0 ? values : x > 0
Vs lower_heaviside(Ctx& ctx) {
  return compute_exact(ctx, {"self", "values"}, [](Builder& b, const Vs& x) {
    Value step = hlo::select(b, gt(b, x[0], 0), cst(b, x[0], 1), cst(b, x[0], 0));
    return hlo::select(b, eq(b, x[0], 0), x[1], step);
  });
}

// sinc(x) = sin(pi x) / (pi x), 1 at 0.
Vs lower_sinc(Ctx& ctx) {
  return compute(ctx, {"self"}, [](Builder& b, const Vs& x) {
    Value px = mul_c(b, x[0], M_PI);
    Value r = hlo::div(b, hlo::sin(b, px), px);
    return hlo::select(b, eq(b, x[0], 0), cst(b, r, 1), r);
  });
}

}  // namespace

TPU_LOWERING("aten::relu", lower_relu, reads({"self"}));
TPU_LOWERING("aten::threshold", lower_threshold, reads({"self", "threshold", "value"}));
TPU_LOWERING("aten::gelu", lower_gelu, reads({"self", "approximate"}));
TPU_LOWERING("aten::silu", lower_silu, reads({"self"}));
TPU_LOWERING("aten::mish", lower_mish, reads({"self"}));
TPU_LOWERING("aten::leaky_relu", lower_leaky_relu, reads({"self", "negative_slope"}));
TPU_LOWERING("aten::elu", lower_elu, reads({"self", "alpha", "scale", "input_scale"}));
TPU_LOWERING("aten::softplus", lower_softplus, reads({"self", "beta", "threshold"}));
TPU_LOWERING("aten::hardtanh", lower_hardtanh, reads({"self", "min_val", "max_val"}));
TPU_LOWERING("aten::hardsigmoid", lower_hardsigmoid, reads({"self"}));
TPU_LOWERING("aten::hardswish", lower_hardswish, reads({"self"}));
TPU_LOWERING("aten::logit", lower_logit, reads({"self", "eps"}));
TPU_LOWERING("aten::softshrink", lower_softshrink, reads({"self", "lambd"}));
TPU_LOWERING("aten::hardshrink", lower_hardshrink, reads({"self", "lambd"}));
TPU_LOWERING("aten::log_sigmoid_forward", lower_log_sigmoid_forward, reads({"self"}));
TPU_LOWERING("aten::heaviside", lower_heaviside, reads({"self", "values"}));
TPU_LOWERING("aten::sinc", lower_sinc, reads({"self"}));

}  // namespace tpu::lowering
