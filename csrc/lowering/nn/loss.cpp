// Loss functions and their backward ops: nll_loss (1-d/2-d and the 2d variant), mse_loss,
// binary_cross_entropy, binary_cross_entropy_with_logits, smooth_l1_loss and huber_loss.
// Elementwise terms are computed in float for bf16/f16 and rounded to the result dtype before
// the reduction, which then accumulates in float: the order of roundings of the CPU kernels
// (elementwise kernel, then loss.mean() / loss.sum()).
#include "lowering/core/dynamic.h"
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

enum Reduction : int64_t { kNone = 0, kMean = 1, kSum = 2 };

// Argument i converted to `dtype` and broadcast to `shape`.
Value arg_as(Ctx& c, std::string_view name, DType dtype, const Shape& shape) {
  return hlo::broadcast_to(c.b, hlo::convert(c.b, c.tensor(name), dtype), shape);
}

Value scalar(Builder& b, const Value& like, double v) { return hlo::scalar_like(b, like, v); }

// The elementwise loss (accumulation dtype) rounded to the result dtype, then reduced.
Value apply_reduction(Ctx& c, const Value& loss, int64_t reduction) {
  DType out = c.out().dtype;
  Value l = hlo::convert(c.b, loss, out);
  if (reduction == kNone) return hlo::reshape(c.b, l, c.out().shape);
  l = hlo::convert(c.b, l, compute_dtype(out));
  std::vector<int64_t> all = reduce::dims_or_all({}, l.rank());
  Value s = reduce::sum(c.b, l, all);
  if (reduction == kMean)
    s = hlo::div(c.b, s, hlo::constant(c.b, s.dtype(), static_cast<double>(l.type.numel())));
  return hlo::reshape(c.b, hlo::convert(c.b, s, out), c.out().shape);
}

// Shape of an elementwise loss over arguments `names` (the meta result for reduction=none).
Shape loss_shape(Ctx& c, const std::vector<std::string_view>& names) {
  Shape s;
  for (std::string_view name : names)
    if (c.has(name)) s = reduce::broadcast_shapes(s, c.tensor(name).shape());
  return s;
}

// The scale of a mean-reduced gradient: 1/numel(self) or 1.
double grad_norm(Ctx& c, std::string_view self_arg, std::string_view reduction_arg) {
  if (c.int_arg(reduction_arg) != kMean) return 1.0;
  return 1.0 / static_cast<double>(c.tensor(self_arg).type.numel());
}

// Everything a backward needs in the accumulation dtype, broadcast to the grad_input shape.
struct BackwardArgs {
  Value g, x, t;
};
BackwardArgs backward_args(Ctx& c) {
  DType acc = compute_dtype(c.out().dtype);
  const Shape& s = c.out().shape;
  return {arg_as(c, "grad_output", acc, s), arg_as(c, "self", acc, s), arg_as(c, "target", acc, s)};
}

// ---- mse_loss ----

std::vector<Value> lower_mse_loss(Ctx& c) {
  DType acc = compute_dtype(c.out().dtype);
  Shape s = loss_shape(c, {"self", "target"});
  Value d = hlo::sub(c.b, arg_as(c, "self", acc, s), arg_as(c, "target", acc, s));
  return {apply_reduction(c, hlo::mul(c.b, d, d), c.int_arg("reduction"))};
}

// mse_loss_backward(grad_output, self, target, reduction): 2 * norm * (x - t) * g
std::vector<Value> lower_mse_loss_backward(Ctx& c) {
  BackwardArgs a = backward_args(c);
  double norm = 2.0 * grad_norm(c, "self", "reduction");
  Value r = hlo::mul(c.b, hlo::mul(c.b, scalar(c.b, a.x, norm), hlo::sub(c.b, a.x, a.t)), a.g);
  return {finish(c, r)};
}

// ---- binary_cross_entropy ----

// (t - 1) * max(log1p(-x), -100) - t * max(log(x), -100), times weight: the CPU formula.
std::vector<Value> lower_bce(Ctx& c) {
  Builder& b = c.b;
  DType acc = compute_dtype(c.out().dtype);
  Shape s = loss_shape(c, {"self", "target", "weight"});
  Value x = arg_as(c, "self", acc, s), t = arg_as(c, "target", acc, s);
  // As on CPU, inputs must be probabilities (NaN fails the check too).
  Value in_01 =
      hlo::and_(b, hlo::compare(b, x, scalar(b, x, 0), "GE"), hlo::compare(b, x, scalar(b, x, 1), "LE"));
  c.require(reduce::prod(b, in_01, reduce::dims_or_all({}, in_01.rank())),
            "all elements of input should be between 0 and 1");
  Value lo = scalar(b, x, -100);
  Value log1m = hlo::max(b, hlo::log1p(b, hlo::neg(b, x)), lo);
  Value logx = hlo::max(b, hlo::log(b, x), lo);
  Value loss = hlo::sub(b, hlo::mul(b, hlo::sub(b, t, scalar(b, t, 1)), log1m), hlo::mul(b, t, logx));
  if (c.has("weight")) {
    // The CPU kernel multiplies the rounded loss by the weight (loss.mul_(weight)).
    loss = hlo::convert(b, hlo::convert(b, loss, c.out().dtype), acc);
    loss = hlo::mul(b, loss, arg_as(c, "weight", acc, s));
  }
  return {apply_reduction(c, loss, c.int_arg("reduction"))};
}

// binary_cross_entropy_backward(grad_output, self, target, weight?, reduction):
//   g * (x - t) / max((1 - x) * x, 1e-12) [* weight] [/ numel]
std::vector<Value> lower_bce_backward(Ctx& c) {
  Builder& b = c.b;
  BackwardArgs a = backward_args(c);
  Value denom = hlo::max(b, hlo::mul(b, hlo::sub(b, scalar(b, a.x, 1), a.x), a.x), scalar(b, a.x, 1e-12));
  Value r = hlo::div(b, hlo::mul(b, a.g, hlo::sub(b, a.x, a.t)), denom);
  if (c.has("weight")) r = hlo::mul(b, r, arg_as(c, "weight", r.dtype(), r.shape()));
  double norm = grad_norm(c, "self", "reduction");
  if (norm != 1.0) r = hlo::mul(b, r, scalar(b, r, norm));
  return {finish(c, r)};
}

// binary_cross_entropy_with_logits(self, target, weight?, pos_weight?, reduction):
//   (1 - t) * x - log_sigmoid(x) * (pos_weight ? (pos_weight - 1) * t + 1 : 1), times weight,
// with log_sigmoid(x) = min(x, 0) - log1p(exp(-|x|)). PyTorch composes it from tensor ops, so
// for bf16/f16 every intermediate is rounded to the result dtype (`r` below) as on CPU.
std::vector<Value> lower_bce_with_logits(Ctx& c) {
  Builder& b = c.b;
  DType out = c.out().dtype, acc = compute_dtype(out);
  auto r = [&](const Value& v) { return precision::round_to(b, v, out); };
  Shape s = loss_shape(c, {"self", "target", "weight", "pos_weight"});
  Value x = arg_as(c, "self", acc, s), t = arg_as(c, "target", acc, s);
  Value zero = scalar(b, x, 0), one = scalar(b, x, 1);
  Value ls = r(hlo::sub(b, hlo::min(b, x, zero), hlo::log1p(b, hlo::exp(b, hlo::neg(b, hlo::abs(b, x))))));
  if (c.has("pos_weight")) {
    Value pw = arg_as(c, "pos_weight", acc, s);
    ls = r(hlo::mul(b, ls, r(hlo::add(b, r(hlo::mul(b, r(hlo::sub(b, pw, one)), t)), one))));
  }
  Value loss = r(hlo::sub(b, r(hlo::mul(b, r(hlo::sub(b, one, t)), x)), ls));
  if (c.has("weight")) loss = r(hlo::mul(b, loss, arg_as(c, "weight", acc, s)));
  return {apply_reduction(c, loss, c.int_arg("reduction"))};
}

// ---- smooth_l1_loss / huber_loss ----

// The runtime `beta`/`delta` float argument i as a value of x's type.
Value runtime_scalar(Ctx& c, std::string_view name, const Value& like) {
  return hlo::broadcast_in_dim(c.b, hlo::convert(c.b, c.tensor(name), like.dtype()), like.shape(), {});
}

// |self - target| in the accumulation dtype, broadcast to the elementwise loss shape.
Value abs_difference(Ctx& c) {
  DType acc = compute_dtype(c.out().dtype);
  Shape s = loss_shape(c, {"self", "target"});
  return hlo::abs(c.b, hlo::sub(c.b, arg_as(c, "self", acc, s), arg_as(c, "target", acc, s)));
}

// |d| < beta ? 0.5 d^2 / beta : |d| - 0.5 beta  (beta = 0 gives |d|, the l1 loss, as on CPU)
std::vector<Value> lower_smooth_l1(Ctx& c) {
  Builder& b = c.b;
  Value z = abs_difference(c);
  Value beta = runtime_scalar(c, "beta", z);
  Value half = scalar(b, z, 0.5);
  Value quad = hlo::div(b, hlo::mul(b, half, hlo::mul(b, z, z)), beta);
  Value lin = hlo::sub(b, z, hlo::mul(b, half, beta));
  Value loss = hlo::select(b, hlo::compare(b, z, beta, "LT"), quad, lin);
  return {apply_reduction(c, loss, c.int_arg("reduction"))};
}

// |d| < delta ? 0.5 d^2 : delta * (|d| - 0.5 delta)
std::vector<Value> lower_huber(Ctx& c) {
  Builder& b = c.b;
  Value z = abs_difference(c);
  Value delta = runtime_scalar(c, "delta", z);
  Value half = scalar(b, z, 0.5);
  Value quad = hlo::mul(b, half, hlo::mul(b, z, z));
  Value lin = hlo::mul(b, delta, hlo::sub(b, z, hlo::mul(b, half, delta)));
  Value loss = hlo::select(b, hlo::compare(b, z, delta, "LT"), quad, lin);
  return {apply_reduction(c, loss, c.int_arg("reduction"))};
}

// The CPU backward kernels: d = x - t; d <= -beta -> -norm*g*k; d >= beta -> norm*g*k;
// otherwise the quadratic part's slope. (smooth_l1: k = 1, slope norm*d*g/beta;
// huber: k = delta, slope norm*d*g.)
Value piecewise_backward(Ctx& c, bool huber) {
  Builder& b = c.b;
  BackwardArgs a = backward_args(c);
  Value d = hlo::sub(b, a.x, a.t);
  Value beta = runtime_scalar(c, huber ? "delta" : "beta", d);
  Value ng = hlo::mul(b, scalar(b, d, grad_norm(c, "self", "reduction")), a.g);
  Value outer = huber ? hlo::mul(b, ng, beta) : ng;
  Value inner = huber ? hlo::mul(b, ng, d) : hlo::div(b, hlo::mul(b, ng, d), beta);
  Value r = hlo::select(b, hlo::compare(b, d, beta, "GE"), outer, inner);
  r = hlo::select(b, hlo::compare(b, d, hlo::neg(b, beta), "LE"), hlo::neg(b, outer), r);
  return finish(c, r);
}
std::vector<Value> lower_smooth_l1_backward(Ctx& c) { return {piecewise_backward(c, false)}; }
std::vector<Value> lower_huber_backward(Ctx& c) { return {piecewise_backward(c, true)}; }

// ---- nll_loss ----

// The class dimension of nll_loss inputs: (C), (N, C) or (N, C, d1, ...).
int64_t class_dim(const Value& self) { return self.rank() >= 2 ? 1 : 0; }

struct NllTerms {
  Value mask;   // self-shaped: the target class of each sample, and the sample is not ignored
  Value w;      // target-shaped weights, 0 for ignored samples (accumulation dtype)
  Value valid;  // target-shaped: not ignored
};

NllTerms nll_terms(Ctx& c, const Value& self, const Value& target, std::string_view weight_arg,
                   int64_t ignore) {
  Builder& b = c.b;
  int64_t cd = class_dim(self);
  DType acc = compute_dtype(self.dtype());
  std::vector<int64_t> other;
  for (int i = 0; i < self.rank(); ++i)
    if (i != cd) other.push_back(i);
  Value tgt = hlo::convert(b, target, DType::I64);
  Value valid = hlo::compare(b, tgt, hlo::scalar_like(b, tgt, static_cast<double>(ignore)), "NE");
  // Targets other than ignore_index must name a class (the CPU kernel raises IndexError).
  Value in_range =
      hlo::and_(b, hlo::compare(b, tgt, hlo::scalar_like(b, tgt, 0), "GE"),
                hlo::compare(b, tgt, hlo::scalar_like(b, tgt, static_cast<double>(self.dim(cd))), "LT"));
  Value ok = hlo::or_(b, in_range, hlo::logical_not(b, valid));
  c.require(reduce::prod(b, ok, reduce::dims_or_all({}, ok.rank())), "Target is out of bounds.",
            CheckError::Index);
  Value classes = hlo::iota(b, ir::Type{DType::I64, self.shape()}, cd);
  Value hit = hlo::compare(b, classes, hlo::broadcast_in_dim(b, tgt, self.shape(), other), "EQ");
  hit = hlo::and_(b, hit, hlo::broadcast_in_dim(b, valid, self.shape(), other));
  Value w;
  if (c.has(weight_arg)) {
    // weight[target] by the same one-hot mask (no gather, and no out-of-range reads for
    // ignore_index = -100).
    Value wt = hlo::broadcast_in_dim(b, hlo::convert(b, c.tensor(weight_arg), acc), self.shape(), {cd});
    w = reduce::sum(b, hlo::select(b, hit, wt, hlo::full(b, wt.type, 0)), {cd});
  } else {
    w = hlo::select(b, valid, hlo::full(b, ir::Type{acc, tgt.shape()}, 1),
                    hlo::full(b, ir::Type{acc, tgt.shape()}, 0));
  }
  return {hit, w, valid};
}

// nll_loss_forward(self, target, weight?, reduction, ignore_index) -> (output, total_weight);
// nll_loss2d_forward has the same schema for (N, C, H, W) inputs.
std::vector<Value> lower_nll_loss_forward(Ctx& c) {
  Builder& b = c.b;
  Value self = c.tensor("self");
  DType acc = compute_dtype(self.dtype());
  Value x = hlo::convert(b, self, acc);
  int64_t cd = class_dim(self);
  NllTerms t = nll_terms(c, self, c.tensor("target"), "weight", c.int_arg("ignore_index"));
  // Ignored samples contribute exactly 0, even when their input is -inf.
  Value picked = reduce::sum(b, hlo::select(b, t.mask, x, hlo::full(b, x.type, 0)), {cd});
  Value loss = hlo::select(b, t.valid, hlo::neg(b, hlo::mul(b, picked, t.w)), hlo::full(b, picked.type, 0));
  int64_t reduction = c.int_arg("reduction");
  DType out = c.out(0).dtype;
  auto fin = [&](const Value& v, int k) { return hlo::reshape(b, hlo::convert(b, v, out), c.out(k).shape); };
  std::vector<int64_t> all = reduce::dims_or_all({}, loss.rank());
  Value tw = reduce::sum(b, t.w, all);
  // reduction=none reports total_weight 0 for batched inputs; a single (C) sample reports its
  // weight, as the CPU kernel does.
  if (reduction == kNone) return {fin(loss, 0), fin(self.rank() >= 2 ? hlo::constant(b, acc, 0) : tw, 1)};
  Value total = reduce::sum(b, loss, all);
  if (reduction == kMean) total = hlo::div(b, total, tw);  // 0/0 = NaN when all are ignored
  return {fin(total, 0), fin(tw, 1)};
}

// nll_loss_backward(grad_output, self, target, weight?, reduction, ignore_index, total_weight):
// -weight[t] * g (g / total_weight for mean) at each sample's target class, 0 elsewhere.
std::vector<Value> lower_nll_loss_backward(Ctx& c) {
  Builder& b = c.b;
  Value self = c.tensor("self");
  DType acc = compute_dtype(self.dtype());
  int64_t cd = class_dim(self);
  NllTerms t = nll_terms(c, self, c.tensor("target"), "weight", c.int_arg("ignore_index"));
  Value g = hlo::convert(b, c.tensor("grad_output"), acc);
  int64_t reduction = c.int_arg("reduction");
  if (reduction == kMean) g = hlo::div(b, g, hlo::convert(b, c.tensor("total_weight"), acc));
  std::vector<int64_t> other;
  for (int i = 0; i < self.rank(); ++i)
    if (i != cd) other.push_back(i);
  Value per_sample = hlo::neg(b, hlo::mul(b, t.w,
                                          reduction == kNone ? hlo::reshape(b, g, t.w.shape())
                                                             : hlo::broadcast_in_dim(b, g, t.w.shape(), {})));
  Value spread = hlo::broadcast_in_dim(b, per_sample, self.shape(), other);
  Value r = hlo::select(b, t.mask, spread, hlo::full(b, spread.type, 0));
  return {finish(c, r)};
}

// Padded nll_loss (lowering/core/dynamic.h): padded samples take target = ignore_index, so they
// add nothing to the loss, the total weight or the gradient.
void ignore_padded_samples(Ctx& c) {
  Arg& target = c.args[c.index("target")];
  target.value =
      fill_padding(c.b, target.value, target.dims,
                   hlo::constant(c.b, target.value.dtype(), static_cast<double>(c.int_arg("ignore_index"))));
}

std::vector<Value> lower_nll_loss_forward_padded(Ctx& c) {
  ignore_padded_samples(c);
  return lower_nll_loss_forward(c);
}

std::vector<Value> lower_nll_loss_backward_padded(Ctx& c) {
  ignore_padded_samples(c);
  return lower_nll_loss_backward(c);
}

}  // namespace

const Signature kNllLossBackwardReads =
    reads({"grad_output", "self", "target", "weight", "reduction", "ignore_index", "total_weight"});

TPU_LOWERING("aten::mse_loss", lower_mse_loss, reads({"self", "target", "reduction"}));
TPU_LOWERING("aten::mse_loss_backward", lower_mse_loss_backward,
             reads({"grad_output", "self", "target", "reduction"}));
TPU_LOWERING("aten::binary_cross_entropy", lower_bce, reads({"self", "target", "weight", "reduction"}));
TPU_LOWERING("aten::binary_cross_entropy_backward", lower_bce_backward,
             reads({"grad_output", "self", "target", "weight", "reduction"}));
TPU_LOWERING("aten::binary_cross_entropy_with_logits", lower_bce_with_logits,
             reads({"self", "target", "weight", "pos_weight", "reduction"}));
TPU_LOWERING("aten::smooth_l1_loss", lower_smooth_l1, reads({"self", "target", "reduction", "beta"}));
TPU_LOWERING("aten::smooth_l1_loss_backward", lower_smooth_l1_backward,
             reads({"grad_output", "self", "target", "reduction", "beta"}));
TPU_LOWERING("aten::huber_loss", lower_huber, reads({"self", "target", "reduction", "delta"}));
TPU_LOWERING("aten::huber_loss_backward", lower_huber_backward,
             reads({"grad_output", "self", "target", "reduction", "delta"}));
TPU_LOWERING("aten::nll_loss_forward", lower_nll_loss_forward,
             reads({"self", "target", "weight", "reduction", "ignore_index"}));
TPU_LOWERING("aten::nll_loss_backward", lower_nll_loss_backward, kNllLossBackwardReads);
TPU_LOWERING("aten::nll_loss2d_forward", lower_nll_loss_forward,
             reads({"self", "target", "weight", "reduction", "ignore_index"}));
TPU_LOWERING("aten::nll_loss2d_backward", lower_nll_loss_backward, kNllLossBackwardReads);
TPU_PADDED("aten::nll_loss_forward", custom(lower_nll_loss_forward_padded));
TPU_PADDED("aten::nll_loss_backward", custom(lower_nll_loss_backward_padded));
TPU_PADDED("aten::nll_loss2d_forward", custom(lower_nll_loss_forward_padded));
TPU_PADDED("aten::nll_loss2d_backward", custom(lower_nll_loss_backward_padded));

}  // namespace tpu::lowering
