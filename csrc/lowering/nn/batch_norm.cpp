// Batch norm: _native_batch_norm_legit (training, updating running_mean/var in place, or eval),
// its no_stats form, _native_batch_norm_legit_no_training, _batch_norm_with_update, and the
// backward ops native_batch_norm_backward / batch_norm_backward. native_batch_norm itself is
// routed to these by aten/nn_kernels.cpp (its schema hides its writes).
//
// As PyTorch's CPU kernels compute them: statistics per channel (dim 1) over the batch and
// spatial positions in float for bf16/f16; save_invstd = 1 / sqrt(var_sum / n + eps); the
// running variance takes the unbiased var_sum / (n - 1):
//   running = momentum * batch_stat + (1 - momentum) * running.
// For bf16/f16 (with parameters in the same dtype) CPU stores mean and var_sum in that dtype,
// divides var_sum by n in it too, rounds invstd, and normalises with those rounded statistics
// as fma(x, invstd * w, b - mean * invstd * w) in float (train_reduced below).
#include "lowering/core/hlo.h"
#include "lowering/core/precision.h"
#include "lowering/core/reduce_util.h"
#include "lowering/core/registry.h"

namespace tpu::lowering {

namespace {

using ir::Builder;
using ir::DType;
using ir::Shape;
using ir::Value;

std::vector<int64_t> reduce_dims(int rank) {
  std::vector<int64_t> d = {0};
  for (int i = 2; i < rank; ++i) d.push_back(i);
  return d;
}

// A per-channel vector [C] broadcast along dim 1 of `shape`.
Value per_channel(Builder& b, const Value& v, const Shape& shape) {
  return hlo::broadcast_in_dim(b, v, shape, {1});
}

Value scalar_to(Builder& b, const Value& s, DType t, const Shape& shape) {
  return hlo::broadcast_in_dim(b, hlo::convert(b, s, t), shape, {});
}

struct BatchStats {
  Value mean, var_sum;  // [C], accumulation dtype
  double n = 0;         // elements per channel
};

BatchStats batch_stats(Builder& b, const Value& x) {
  std::vector<int64_t> dims = reduce_dims(x.rank());
  BatchStats s;
  s.n = static_cast<double>(reduce::count(x.shape(), dims));
  s.mean = reduce::sum(b, x, dims);
  s.mean = hlo::div(b, s.mean, hlo::full(b, s.mean.type, s.n));
  Value dev = hlo::sub(b, x, per_channel(b, s.mean, x.shape()));
  s.var_sum = reduce::sum(b, hlo::mul(b, dev, dev), dims);
  return s;
}

// (x - mean) * invstd * weight + bias, all in x's (accumulation) dtype.
Value normalize(Ctx& c, const Value& x, const Value& mean, const Value& invstd, std::string_view weight_arg,
                std::string_view bias_arg) {
  Builder& b = c.b;
  Value alpha = invstd;
  if (c.has(weight_arg)) alpha = hlo::mul(b, alpha, hlo::convert(b, c.tensor(weight_arg), x.dtype()));
  Value y = hlo::mul(b, hlo::sub(b, x, per_channel(b, mean, x.shape())), per_channel(b, alpha, x.shape()));
  if (c.has(bias_arg))
    y = hlo::add(b, y, per_channel(b, hlo::convert(b, c.tensor(bias_arg), x.dtype()), x.shape()));
  return y;
}

Value eval_invstd(Builder& b, const Value& running_var, const Value& eps, DType t) {
  Value v = hlo::convert(b, running_var, t);
  return hlo::div(b, hlo::full(b, v.type, 1), hlo::sqrt(b, hlo::add(b, v, scalar_to(b, eps, t, v.shape()))));
}

// momentum * stat + (1 - momentum) * running, in the running stat's accumulation dtype.
Value update(Builder& b, const Value& running, const Value& stat, const Value& momentum) {
  DType t = compute_dtype(running.dtype());
  Value r = hlo::convert(b, running, t);
  Value m = scalar_to(b, momentum, t, r.shape());
  Value one_minus = hlo::sub(b, hlo::full(b, r.type, 1), m);
  Value out = hlo::add(b, hlo::mul(b, m, hlo::convert(b, stat, t)), hlo::mul(b, one_minus, r));
  return hlo::convert(b, out, running.dtype());
}

struct TrainResult {
  Value out, mean, invstd, running_mean, running_var;
};

// Training-mode batch norm of args (input, weight, bias) with running stats at rm/rv (or -1).
TrainResult train(Ctx& c, std::string_view mean_arg, std::string_view var_arg, const Value& momentum,
                  const Value& eps) {
  Builder& b = c.b;
  Value x = c.tensor("input");
  DType acc = compute_dtype(x.dtype());
  x = hlo::convert(b, x, acc);
  BatchStats s = batch_stats(b, x);
  Value var = hlo::div(b, s.var_sum, hlo::full(b, s.var_sum.type, s.n));
  Value invstd = hlo::div(b, hlo::full(b, var.type, 1),
                          hlo::sqrt(b, hlo::add(b, var, scalar_to(b, eps, acc, var.shape()))));
  TrainResult r;
  // CPU's reduced-precision path: a bf16/f16 input whose parameters are not float (is_mixed_type
  // in PyTorch's batch_norm.h). The statistics it returns keep the meta kernel's (float) dtype,
  // holding the rounded values.
  DType narrow = c.tensor("input").dtype();
  bool mixed = (c.has("weight") && c.tensor("weight").dtype() == DType::F32) ||
               (c.has("bias") && c.tensor("bias").dtype() == DType::F32);
  if (precision::is_reduced(narrow) && !mixed) {
    auto round = [&](const Value& v) { return precision::round_to(b, v, narrow); };
    s.mean = round(s.mean);
    s.var_sum = round(s.var_sum);
    var = round(hlo::div(b, s.var_sum, hlo::full(b, s.var_sum.type, s.n)));
    // In f64 so that XLA's rsqrt (an ulp off at times) is not what gets rounded.
    Value v64 = hlo::convert(b, hlo::add(b, var, scalar_to(b, eps, acc, var.shape())), DType::F64);
    invstd = round(hlo::convert(b, hlo::rsqrt(b, v64), acc));
    Value alpha = invstd;
    if (c.has("weight")) alpha = hlo::mul(b, alpha, hlo::convert(b, c.tensor("weight"), acc));
    Value beta = hlo::neg(b, hlo::mul(b, s.mean, alpha));
    if (c.has("bias")) beta = hlo::add(b, hlo::convert(b, c.tensor("bias"), acc), beta);
    auto wide = [&](const Value& v) { return hlo::convert(b, per_channel(b, v, x.shape()), DType::F64); };
    r.out = hlo::convert(b, hlo::add(b, hlo::mul(b, hlo::convert(b, x, DType::F64), wide(alpha)), wide(beta)),
                         acc);
  } else {
    r.out = normalize(c, x, s.mean, invstd, "weight", "bias");
  }
  r.mean = s.mean;
  r.invstd = invstd;
  if (!mean_arg.empty()) {
    // n == 1 gives inf / nan, as on CPU.
    Value unbiased = hlo::div(b, s.var_sum, hlo::full(b, s.var_sum.type, s.n - 1));
    r.running_mean = update(b, c.tensor(mean_arg), s.mean, momentum);
    r.running_var = update(b, c.tensor(var_arg), unbiased, momentum);
  }
  return r;
}

// Eval-mode batch norm with the running stats mean_arg/var_arg: (out, mean, invstd) in the accumulation
// dtype.
std::vector<Value> eval(Ctx& c, std::string_view mean_arg, std::string_view var_arg, const Value& eps) {
  Builder& b = c.b;
  Value x = c.tensor("input");
  DType acc = compute_dtype(x.dtype());
  x = hlo::convert(b, x, acc);
  Value mean = hlo::convert(b, c.tensor(mean_arg), acc);
  Value invstd = eval_invstd(b, c.tensor(var_arg), eps, acc);
  return {normalize(c, x, mean, invstd, "weight", "bias"), mean, invstd};
}

// _native_batch_norm_legit(input, weight?, bias?, running_mean!, running_var!, training,
// momentum, eps): (running_mean, running_var) written, then (out, save_mean, save_invstd).
std::vector<Value> lower_batch_norm_legit(Ctx& c) {
  if (!c.bool_arg("training")) {
    std::vector<Value> e = eval(c, "running_mean", "running_var", c.tensor("eps"));
    return {c.tensor("running_mean"), c.tensor("running_var"), finish(c, e[0], 2), finish(c, e[1], 3),
            finish(c, e[2], 4)};
  }
  TrainResult r = train(c, "running_mean", "running_var", c.tensor("momentum"), c.tensor("eps"));
  return {r.running_mean, r.running_var, finish(c, r.out, 2), finish(c, r.mean, 3), finish(c, r.invstd, 4)};
}

// _native_batch_norm_legit.no_stats(input, weight?, bias?, training, momentum, eps)
std::vector<Value> lower_batch_norm_legit_no_stats(Ctx& c) {
  TrainResult r = train(c, {}, {}, c.tensor("momentum"), c.tensor("eps"));
  return {finish(c, r.out, 0), finish(c, r.mean, 1), finish(c, r.invstd, 2)};
}

// _native_batch_norm_legit_no_training(input, weight?, bias?, running_mean, running_var,
// momentum, eps): save_mean / save_invstd are the running mean and 1 / sqrt(running_var + eps),
// as PyTorch returns them on non-CPU devices.
std::vector<Value> lower_batch_norm_no_training(Ctx& c) {
  std::vector<Value> e = eval(c, "running_mean", "running_var", c.tensor("eps"));
  return {finish(c, e[0], 0), finish(c, e[1], 1), finish(c, e[2], 2)};
}

// _batch_norm_with_update(input, weight?, bias?, running_mean!, running_var!, momentum, eps)
// -> (out, save_mean, save_invstd, reserve)
std::vector<Value> lower_batch_norm_with_update(Ctx& c) {
  TrainResult r = train(c, "running_mean", "running_var", c.tensor("momentum"), c.tensor("eps"));
  return {r.running_mean,       r.running_var,          finish(c, r.out, 2),
          finish(c, r.mean, 3), finish(c, r.invstd, 4), hlo::full(c.b, c.out(5), 0)};
}

// Shared backward of (grad_out, input, weight?, running_mean?, running_var?, save_mean?,
// save_invstd?, ..., output_mask), given the training flag and eps:
//   train: gx = (gy - mean(gy) - (x - mean) * invstd^2 * dot / n) * invstd * w
//   eval:  gx = gy * invstd * w                 (invstd from the running variance)
//   gw = dot * invstd, gb = sum(gy), with dot = sum(gy * (x - mean)).
std::vector<Value> batch_norm_backward(Ctx& c, bool training, const Value& eps) {
  Builder& b = c.b;
  Value x = c.tensor("input");
  DType acc = compute_dtype(x.dtype());
  x = hlo::convert(b, x, acc);
  Value gy = hlo::convert(b, c.tensor("grad_out"), acc);
  std::vector<int64_t> dims = reduce_dims(x.rank());
  double n = static_cast<double>(reduce::count(x.shape(), dims));
  Value mean, invstd;
  if (training) {
    mean = hlo::convert(b, c.tensor("save_mean"), acc);
    // batch_norm_backward calls it save_var, but it holds the saved invstd there too.
    invstd = hlo::convert(b, c.tensor(c.declared_one_of({"save_invstd", "save_var"})), acc);
  } else {
    mean = hlo::convert(b, c.tensor("running_mean"), acc);
    invstd = eval_invstd(b, c.tensor("running_var"), eps, acc);
  }
  Value centered = hlo::sub(b, x, per_channel(b, mean, x.shape()));
  Value sum = reduce::sum(b, gy, dims);
  Value dot = reduce::sum(b, hlo::mul(b, gy, centered), dims);
  Value w = c.has("weight") ? hlo::convert(b, c.tensor("weight"), acc) : hlo::full(b, invstd.type, 1);
  std::vector<Value> out(3);
  if (output_wanted(c, 0)) {
    Value scale = per_channel(b, hlo::mul(b, invstd, w), x.shape());
    if (training) {
      Value k = hlo::div(b, hlo::mul(b, dot, hlo::mul(b, invstd, invstd)), hlo::full(b, dot.type, n));
      Value mean_gy = hlo::div(b, sum, hlo::full(b, sum.type, n));
      Value inner = hlo::sub(b, hlo::sub(b, gy, per_channel(b, mean_gy, x.shape())),
                             hlo::mul(b, centered, per_channel(b, k, x.shape())));
      out[0] = hlo::mul(b, inner, scale);
    } else {
      out[0] = hlo::mul(b, gy, scale);
    }
  }
  if (output_wanted(c, 1)) out[1] = hlo::mul(b, dot, invstd);
  if (output_wanted(c, 2)) out[2] = sum;
  return masked_outputs(c, out);
}

// native_batch_norm_backward(grad_out, input, weight?, running_mean?, running_var?,
// save_mean?, save_invstd?, train, eps, output_mask)
std::vector<Value> lower_native_batch_norm_backward(Ctx& c) {
  return batch_norm_backward(c, c.bool_arg("train"), c.tensor("eps"));
}

// batch_norm_backward(grad_out, input, weight, running_mean?, running_var?, save_mean?,
// save_var?, update, eps, output_mask, reserve): save_var holds the saved invstd.
std::vector<Value> lower_batch_norm_backward(Ctx& c) {
  return batch_norm_backward(c, c.bool_arg("update"), c.tensor("eps"));
}

}  // namespace

TPU_LOWERING("aten::_native_batch_norm_legit", lower_batch_norm_legit,
             reads({"input", "weight", "bias", "running_mean", "running_var", "training", "momentum",
                    "eps"}));
TPU_LOWERING("aten::_native_batch_norm_legit.no_stats", lower_batch_norm_legit_no_stats,
             reads({"input", "weight", "bias", "momentum", "eps"}));
TPU_LOWERING("aten::_native_batch_norm_legit_no_training", lower_batch_norm_no_training,
             reads({"input", "weight", "bias", "running_mean", "running_var", "eps"}));
TPU_LOWERING("aten::_batch_norm_with_update", lower_batch_norm_with_update,
             reads({"input", "weight", "bias", "running_mean", "running_var", "momentum", "eps"}));
TPU_LOWERING("aten::native_batch_norm_backward", lower_native_batch_norm_backward,
             reads({"grad_out", "input", "weight", "running_mean", "running_var", "save_mean", "save_invstd",
                    "train", "eps", "output_mask"}));
TPU_LOWERING("aten::batch_norm_backward", lower_batch_norm_backward,
             reads({"grad_out", "input", "weight", "running_mean", "running_var", "save_mean", "save_var",
                    "update", "eps", "output_mask"}));

}  // namespace tpu::lowering
