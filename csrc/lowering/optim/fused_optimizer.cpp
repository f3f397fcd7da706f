// Fused optimizer steps (_fused_adam, _fused_adamw, _fused_sgd and their tensor-lr forms), the
// functional twins of what torch.optim calls with fused=True. The math follows PyTorch's CPU
// kernels (aten/src/ATen/native/cpu/Fused{Adam,SGD}Kernel.cpp): step-dependent coefficients in
// double, element math in opmath (float32 for half types), one rounding per stored tensor.
// lr, betas, eps and weight decay are runtime scalars, so schedules never recompile; choices
// PyTorch makes on their values (weight_decay != 0, lerp weight < 0.5) become selects.
#include "lowering/core/hlo.h"
#include "lowering/core/kit.h"
#include "lowering/core/registry.h"

namespace tpu::lowering {

namespace {

using ir::DType;
using ir::Value;

// A 0-d argument (Scalar or Tensor) as f64.
Value f64(Ctx& c, std::string_view name) {
  return hlo::reshape(c.b, hlo::convert(c.b, c.tensor(name), DType::F64), {});
}

Value f64_const(Ctx& c, double v) { return hlo::constant(c.b, DType::F64, v); }

// `s` (0-d) converted to `t` and broadcast to `shape`.
Value splat(Ctx& c, const Value& s, DType t, const ir::Shape& shape) {
  return hlo::broadcast_in_dim(c.b, hlo::convert(c.b, s, t), shape, {});
}

// The gradient in compute type `t`, divided by the optional grad_scale argument (AMP), and the
// same value in the gradient's own dtype, which the fused kernels write back into `grads`.
std::pair<Value, Value> unscaled_grad(Ctx& c, const Value& grad, std::string_view grad_scale_arg, DType t) {
  Value g = hlo::convert(c.b, grad, t);
  if (!c.has(grad_scale_arg)) return {g, grad};
  Value scale = hlo::reshape(c.b, hlo::convert(c.b, c.tensor(grad_scale_arg), DType::F32), {});
  g = hlo::div(c.b, g, splat(c, scale, t, grad.shape()));
  return {g, hlo::convert(c.b, g, grad.dtype())};
}

// found_inf == 1 skips the whole step (the CPU kernel returns before touching anything).
struct Skip {
  bool present = false;
  Value pred;  // 0-d i1
};

Skip skip_flag(Ctx& c, std::string_view found_inf_arg) {
  Skip s;
  if (!c.has(found_inf_arg)) return s;
  s.present = true;
  Value f = hlo::reshape(c.b, hlo::convert(c.b, c.tensor(found_inf_arg), DType::F32), {});
  s.pred = hlo::compare(c.b, f, hlo::constant(c.b, DType::F32, 1.0), "EQ");
  return s;
}

// A state tensor's new value in its own dtype; with found_inf set, its old value (the step is
// skipped).
Value stepped(Ctx& c, const Skip& skip, const Value& old_value, const Value& new_opmath) {
  Value v = hlo::convert(c.b, new_opmath, old_value.dtype());
  if (!skip.present) return v;
  return hlo::select(c.b, hlo::broadcast_in_dim(c.b, skip.pred, old_value.shape(), {}), old_value, v);
}

// _fused_adam[w](self, grads, exp_avgs, exp_avg_sqs, max_exp_avg_sqs, state_steps, *, lr,
//   beta1, beta2, weight_decay, eps, amsgrad, maximize, grad_scale, found_inf)
std::vector<Value> adam(Ctx& c, bool adamw) {
  const auto& params = c.arg("self").values;
  const auto& grads = c.arg("grads").values;
  const auto& exp_avgs = c.arg("exp_avgs").values;
  const auto& exp_avg_sqs = c.arg("exp_avg_sqs").values;
  const auto& max_sqs = c.arg("max_exp_avg_sqs").values;
  const auto& steps = c.arg("state_steps").values;
  const bool amsgrad = c.bool_arg("amsgrad");
  const bool maximize = c.bool_arg("maximize");
  const size_t n = params.size();
  Skip skip = skip_flag(c, "found_inf");

  // Step-independent coefficients (double, as the CPU kernel).
  Value lr = f64(c, "lr"), beta1 = f64(c, "beta1"), beta2 = f64(c, "beta2"), wd = f64(c, "weight_decay"),
        eps = f64(c, "eps");
  Value one = f64_const(c, 1.0);
  Value c1 = hlo::sub(c.b, one, beta1);  // exp_avg_grad_coefficient
  Value c2 = hlo::sub(c.b, one, beta2);  // exp_avg_sq_grad_coefficient
  Value wd_zero = hlo::compare(c.b, wd, f64_const(c, 0.0), "EQ");
  Value decay = hlo::sub(c.b, one, hlo::mul(c.b, lr, wd));  // AdamW's 1 - lr * weight_decay
  Value c1_small = hlo::compare(c.b, hlo::abs(c.b, c1), f64_const(c, 0.5), "LT");

  std::vector<Value> out_params, out_grads, out_avgs, out_sqs, out_max;
  for (size_t k = 0; k < n; ++k) {
    const Value& p0 = params[k];
    const ir::Shape& shape = p0.shape();
    const DType t = compute_dtype(p0.dtype());
    auto S = [&](const Value& s) { return splat(c, s, t, shape); };

    Value step = hlo::reshape(c.b, hlo::convert(c.b, steps[k], DType::F64), {});
    Value bc1 = hlo::sub(c.b, one, hlo::power(c.b, beta1, step));
    Value bc2 = hlo::sub(c.b, one, hlo::power(c.b, beta2, step));
    Value step_size = hlo::div(c.b, lr, bc1);
    Value bc2_sqrt = hlo::sqrt(c.b, bc2);

    Value p = hlo::convert(c.b, p0, t);
    auto [g, g_stored] = unscaled_grad(c, grads[k], "grad_scale", t);
    if (maximize) g = hlo::neg(c.b, g);
    Value wd_zero_b = hlo::broadcast_in_dim(c.b, wd_zero, shape, {});
    if (adamw) {
      p = hlo::select(c.b, wd_zero_b, p, hlo::mul(c.b, p, S(decay)));
    } else {
      g = hlo::select(c.b, wd_zero_b, g, hlo::add(c.b, g, hlo::mul(c.b, p, S(wd))));
    }
    // exp_avg.lerp_(grad, 1 - beta1)
    Value ea = hlo::convert(c.b, exp_avgs[k], t);
    Value w = S(c1);
    Value diff = hlo::sub(c.b, g, ea);
    Value lo = hlo::add(c.b, ea, hlo::mul(c.b, w, diff));
    Value hi = hlo::sub(c.b, g, hlo::mul(c.b, diff, hlo::sub(c.b, S(one), w)));
    ea = hlo::select(c.b, hlo::broadcast_in_dim(c.b, c1_small, shape, {}), lo, hi);
    // exp_avg_sq.mul_(beta2).addcmul_(grad, grad, 1 - beta2)
    Value sq = hlo::convert(c.b, exp_avg_sqs[k], t);
    sq = hlo::add(c.b, hlo::mul(c.b, sq, S(beta2)), hlo::mul(c.b, hlo::mul(c.b, S(c2), g), g));
    Value denom_base = sq;
    Value mx;
    if (amsgrad) {
      mx = hlo::max(c.b, hlo::convert(c.b, max_sqs[k], t), sq);
      denom_base = mx;
    }
    Value denom = hlo::add(c.b, hlo::div(c.b, hlo::sqrt(c.b, denom_base), S(bc2_sqrt)), S(eps));
    p = hlo::sub(c.b, p, hlo::div(c.b, hlo::mul(c.b, S(step_size), ea), denom));

    out_params.push_back(stepped(c, skip, p0, p));
    out_grads.push_back(
        skip.present ? hlo::select(c.b, hlo::broadcast_in_dim(c.b, skip.pred, shape, {}), grads[k], g_stored)
                     : g_stored);
    out_avgs.push_back(stepped(c, skip, exp_avgs[k], ea));
    out_sqs.push_back(stepped(c, skip, exp_avg_sqs[k], sq));
    if (k < max_sqs.size()) out_max.push_back(amsgrad ? stepped(c, skip, max_sqs[k], mx) : max_sqs[k]);
  }
  std::vector<Value> outs = out_params;
  outs.insert(outs.end(), out_grads.begin(), out_grads.end());
  outs.insert(outs.end(), out_avgs.begin(), out_avgs.end());
  outs.insert(outs.end(), out_sqs.begin(), out_sqs.end());
  outs.insert(outs.end(), out_max.begin(), out_max.end());
  return outs;
}

std::vector<Value> lower_fused_adam(Ctx& c) { return adam(c, false); }
std::vector<Value> lower_fused_adamw(Ctx& c) { return adam(c, true); }

// _fused_sgd(self, grads, momentum_buffer_list, *, weight_decay, momentum, lr, dampening,
//   nesterov, maximize, is_first_step, grad_scale, found_inf). torch.optim passes an empty
// buffer list exactly when momentum == 0.
std::vector<Value> lower_fused_sgd(Ctx& c) {
  const auto& params = c.arg("self").values;
  const auto& grads = c.arg("grads").values;
  const auto& bufs = c.arg("momentum_buffer_list").values;
  const bool nesterov = c.bool_arg("nesterov");
  const bool maximize = c.bool_arg("maximize");
  const bool first = c.bool_arg("is_first_step");
  const size_t n = params.size();
  Skip skip = skip_flag(c, "found_inf");

  Value wd = f64(c, "weight_decay"), momentum = f64(c, "momentum"), lr = f64(c, "lr"),
        dampening = f64(c, "dampening");
  Value one = f64_const(c, 1.0);
  Value wd_zero = hlo::compare(c.b, wd, f64_const(c, 0.0), "EQ");
  Value mom_zero = hlo::compare(c.b, momentum, f64_const(c, 0.0), "EQ");
  Value keep = hlo::sub(c.b, one, dampening);

  std::vector<Value> out_params, out_grads, out_bufs;
  for (size_t k = 0; k < n; ++k) {
    const Value& p0 = params[k];
    const ir::Shape& shape = p0.shape();
    const DType t = compute_dtype(p0.dtype());
    auto S = [&](const Value& s) { return splat(c, s, t, shape); };
    auto B = [&](const Value& pred) { return hlo::broadcast_in_dim(c.b, pred, shape, {}); };

    Value p = hlo::convert(c.b, p0, t);
    auto [g, g_stored] = unscaled_grad(c, grads[k], "grad_scale", t);
    if (maximize) g = hlo::neg(c.b, g);
    g = hlo::select(c.b, B(wd_zero), g, hlo::add(c.b, g, hlo::mul(c.b, p, S(wd))));
    Value buf;
    if (k < bufs.size()) {
      if (first) {
        buf = g;
      } else {
        Value old = hlo::convert(c.b, bufs[k], t);
        buf = hlo::add(c.b, hlo::mul(c.b, old, S(momentum)), hlo::mul(c.b, g, S(keep)));
      }
      Value stepped = nesterov ? hlo::add(c.b, g, hlo::mul(c.b, buf, S(momentum))) : buf;
      g = hlo::select(c.b, B(mom_zero), g, stepped);
    }
    p = hlo::sub(c.b, p, hlo::mul(c.b, g, S(lr)));

    out_params.push_back(stepped(c, skip, p0, p));
    out_grads.push_back(skip.present ? hlo::select(c.b, B(skip.pred), grads[k], g_stored) : g_stored);
    if (k < bufs.size()) {
      Value nb = hlo::select(c.b, B(mom_zero), hlo::convert(c.b, bufs[k], t), buf);
      out_bufs.push_back(stepped(c, skip, bufs[k], nb));
    }
  }
  std::vector<Value> outs = out_params;
  outs.insert(outs.end(), out_grads.begin(), out_grads.end());
  outs.insert(outs.end(), out_bufs.begin(), out_bufs.end());
  return outs;
}

}  // namespace

// Registered under the in-place names torch.optim calls: the glue derives an in-place variant
// from a functional lowering only for ops that write their first argument alone, and these
// write five (three) tensor lists. The functional forms are CompositeExplicitAutograd (clone,
// then the in-place op), so they reach these lowerings too. Results are one per written tensor,
// flattened in schema order, which is also what the functional forms return.
const Signature kFusedAdamReads =
    reads({"self", "grads", "exp_avgs", "exp_avg_sqs", "max_exp_avg_sqs", "state_steps", "lr", "beta1",
           "beta2", "weight_decay", "eps", "amsgrad", "maximize", "grad_scale", "found_inf"});
const Signature kFusedSgdReads =
    reads({"self", "grads", "momentum_buffer_list", "weight_decay", "momentum", "lr", "dampening", "nesterov",
           "maximize", "is_first_step", "grad_scale", "found_inf"});

TPU_LOWERING("aten::_fused_adam_", lower_fused_adam, kFusedAdamReads);
TPU_LOWERING("aten::_fused_adam_.tensor_lr", lower_fused_adam, kFusedAdamReads);
TPU_LOWERING("aten::_fused_adamw_", lower_fused_adamw, kFusedAdamReads);
TPU_LOWERING("aten::_fused_adamw_.tensor_lr", lower_fused_adamw, kFusedAdamReads);
TPU_LOWERING("aten::_fused_sgd_", lower_fused_sgd, kFusedSgdReads);
TPU_LOWERING("aten::_fused_sgd_.tensor_lr", lower_fused_sgd, kFusedSgdReads);

}  // namespace tpu::lowering
