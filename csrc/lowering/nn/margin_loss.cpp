// Multi-class margin losses: multi_margin_loss and multilabel_margin_loss_forward, with their
// backward ops. Inputs are (N, C) or a single sample (C); targets pick classes through one-hot
// masks (no gathers), so every term is a dense [N, C] (multilabel: [N, C, C]) computation.
//
// multi_margin:   loss_i = sum_{j != y_i} max(0, margin - x[y_i] + x[j])^p * w[y_i] / C, p in {1, 2}
// multilabel:     loss_i = sum_{valid targets y} sum_{k not a target} max(0, 1 - x[y] + x[k]) / C,
//                 the valid targets being the entries before the first negative one.
// Reduction: none, mean over samples, or sum.
#include <string>

#include "lowering/core/hlo.h"
#include "lowering/core/reduce_util.h"
#include "lowering/core/registry.h"

namespace tpu::lowering {

namespace {

using ir::Builder;
using ir::DType;
using ir::Shape;
using ir::Type;
using ir::Value;

enum Reduction : int64_t { kNone = 0, kMean = 1, kSum = 2 };

Value as_2d(Builder& b, const Value& x) {
  return x.rank() >= 2 ? x : hlo::reshape(b, x, {1, x.type.numel()});
}

Value zeros_like(Builder& b, const Value& v) { return hlo::full(b, v.type, 0); }

// per-sample losses [N] reduced as `reduction` asks, in the output's dtype and shape.
Value reduce_samples(Ctx& c, const Value& per_sample, int64_t reduction) {
  Builder& b = c.b;
  Value r = per_sample;
  if (reduction != kNone) {
    r = reduce::sum(b, per_sample, {0});
    if (reduction == kMean)
      r = hlo::div(b, r, hlo::constant(b, r.dtype(), static_cast<double>(per_sample.dim(0))));
  }
  return hlo::reshape(b, hlo::convert(b, r, c.out().dtype), c.out().shape);
}

// The incoming gradient as [N, 1] (reduction none) or a broadcast scalar, times 1/N for mean.
Value row_grad(Builder& b, const Value& g, int64_t n, int64_t reduction, DType t) {
  Value gv = hlo::convert(b, g, t);
  if (reduction == kNone) return hlo::reshape(b, gv, {n, 1});
  gv = hlo::reshape(b, gv, {1, 1});
  if (reduction == kMean) gv = hlo::div(b, gv, hlo::full(b, gv.type, static_cast<double>(n)));
  return gv;
}

// --- multi_margin_loss -----------------------------------------------------------------------

struct MultiMargin {
  Value x, hit, z, active, wy;  // [N, C] (wy: [N, 1] or invalid)
};

MultiMargin multi_margin_terms(Ctx& c, std::string_view self_arg, std::string_view target_arg,
                               std::string_view margin_arg, std::string_view weight_arg) {
  Builder& b = c.b;
  DType t = compute_dtype(c.tensor(self_arg).dtype());
  MultiMargin m;
  m.x = as_2d(b, hlo::convert(b, c.tensor(self_arg), t));
  const int64_t n = m.x.dim(0), k = m.x.dim(1);
  Value tgt = hlo::reshape(b, hlo::convert(b, c.tensor(target_arg), DType::I64), {n});
  Value ok = hlo::and_(b, hlo::compare(b, tgt, hlo::full(b, tgt.type, 0), "GE"),
                       hlo::compare(b, tgt, hlo::full(b, tgt.type, static_cast<double>(k)), "LT"));
  c.require(reduce::prod(b, ok, {0}), "target out of range");
  m.hit = hlo::compare(b, hlo::iota(b, Type{DType::I64, {n, k}}, 1),
                       hlo::broadcast_in_dim(b, tgt, {n, k}, {0}), "EQ");
  Value xy = reduce::sum(b, hlo::select(b, m.hit, m.x, zeros_like(b, m.x)), {1});
  Value margin = hlo::full(b, Type{t, {n, k}}, c.arg(margin_arg).d);
  m.z = hlo::add(b, hlo::sub(b, margin, hlo::broadcast_in_dim(b, xy, {n, k}, {0})), m.x);
  m.active = hlo::and_(b, hlo::compare(b, m.z, zeros_like(b, m.z), "GT"), hlo::logical_not(b, m.hit));
  if (c.has(weight_arg)) {
    Value w = hlo::broadcast_in_dim(b, hlo::convert(b, c.tensor(weight_arg), t), {n, k}, {1});
    m.wy = hlo::reshape(b, reduce::sum(b, hlo::select(b, m.hit, w, zeros_like(b, w)), {1}), {n, 1});
  }
  return m;
}

// multi_margin_loss(self, target, p, margin, weight?, reduction)
std::vector<Value> lower_multi_margin_loss(Ctx& c) {
  Builder& b = c.b;
  MultiMargin m = multi_margin_terms(c, "self", "target", "margin", "weight");
  const int64_t k = m.x.dim(1);
  Value h = c.arg("p").i == 1 ? m.z : hlo::mul(b, m.z, m.z);
  if (m.wy.valid()) h = hlo::mul(b, h, hlo::broadcast_in_dim(b, m.wy, h.shape(), {0, 1}));
  h = hlo::select(b, m.active, h, zeros_like(b, h));
  Value per_sample =
      hlo::div(b, reduce::sum(b, h, {1}), hlo::full(b, Type{h.dtype(), {h.dim(0)}}, static_cast<double>(k)));
  return {reduce_samples(c, per_sample, c.int_arg("reduction"))};
}

// multi_margin_loss_backward(grad_output, self, target, p, margin, weight?, reduction)
std::vector<Value> lower_multi_margin_loss_backward(Ctx& c) {
  Builder& b = c.b;
  MultiMargin m = multi_margin_terms(c, "self", "target", "margin", "weight");
  const int64_t n = m.x.dim(0), k = m.x.dim(1);
  Value d = c.arg("p").i == 1 ? hlo::full(b, m.z.type, 1) : hlo::mul(b, hlo::full(b, m.z.type, 2), m.z);
  d = hlo::div(b, d, hlo::full(b, d.type, static_cast<double>(k)));
  if (m.wy.valid()) d = hlo::mul(b, d, hlo::broadcast_in_dim(b, m.wy, d.shape(), {0, 1}));
  d = hlo::select(b, m.active, d, zeros_like(b, d));
  // x[j] gains d[j]; x[y] loses their sum.
  Value total = hlo::broadcast_in_dim(b, reduce::sum(b, d, {1}), {n, k}, {0});
  Value gx = hlo::select(b, m.hit, hlo::neg(b, total), d);
  gx = hlo::mul(b, gx,
                hlo::broadcast_to(
                    b, row_grad(b, c.tensor("grad_output"), n, c.int_arg("reduction"), gx.dtype()), {n, k}));
  return {hlo::reshape(b, hlo::convert(b, gx, c.out().dtype), c.out().shape)};
}

// --- multilabel_margin_loss ------------------------------------------------------------------

struct MultiLabel {
  Value x;          // [N, C]
  Value onehot;     // [N, C(j), C(k)]: valid target j names class k
  Value is_target;  // [N, C] i1
  Value active;     // [N, C(j), C(k)]: valid target j, non-target k, positive margin term
  Value z;          // [N, C, C]
};

MultiLabel multilabel_terms(Ctx& c, std::string_view self_arg, std::string_view target_arg) {
  Builder& b = c.b;
  DType t = compute_dtype(c.tensor(self_arg).dtype());
  MultiLabel m;
  m.x = as_2d(b, hlo::convert(b, c.tensor(self_arg), t));
  const int64_t n = m.x.dim(0), k = m.x.dim(1);
  Value tgt = as_2d(b, hlo::convert(b, c.tensor(target_arg), DType::I64));
  Type it{DType::I64, {n, k}};
  Value pos = hlo::iota(b, it, 1);
  // Valid targets: the entries before the first negative one.
  Value neg = hlo::compare(b, tgt, hlo::full(b, it, 0), "LT");
  Value first = reduce::min(b, hlo::select(b, neg, pos, hlo::full(b, it, static_cast<double>(k))), {1});
  Value valid = hlo::compare(b, pos, hlo::broadcast_in_dim(b, first, {n, k}, {0}), "LT");
  Value in_range = hlo::compare(b, tgt, hlo::full(b, it, static_cast<double>(k)), "LT");
  c.require(reduce::prod(b, hlo::or_(b, hlo::logical_not(b, valid), in_range), {0, 1}),
            "target out of range");
  Shape s3 = {n, k, k};
  Value classes = hlo::iota(b, Type{DType::I64, s3}, 2);
  m.onehot = hlo::and_(b, hlo::compare(b, classes, hlo::broadcast_in_dim(b, tgt, s3, {0, 1}), "EQ"),
                       hlo::broadcast_in_dim(b, valid, s3, {0, 1}));
  Value onehot_any = hlo::convert(b, m.onehot, DType::I32);
  m.is_target =
      hlo::compare(b, reduce::sum(b, onehot_any, {1}), hlo::full(b, Type{DType::I32, {n, k}}, 0), "GT");
  Value xk = hlo::broadcast_in_dim(b, m.x, s3, {0, 2});
  Value zeros3 = hlo::full(b, Type{t, s3}, 0);
  Value xy = reduce::sum(b, hlo::select(b, m.onehot, xk, zeros3), {2});  // [N, C(j)]
  m.z = hlo::add(b, hlo::sub(b, hlo::full(b, Type{t, s3}, 1), hlo::broadcast_in_dim(b, xy, s3, {0, 1})), xk);
  m.active = hlo::and_(b,
                       hlo::and_(b, hlo::broadcast_in_dim(b, valid, s3, {0, 1}),
                                 hlo::logical_not(b, hlo::broadcast_in_dim(b, m.is_target, s3, {0, 2}))),
                       hlo::compare(b, m.z, zeros3, "GT"));
  return m;
}

// multilabel_margin_loss_forward(self, target, reduction) -> (output, is_target)
std::vector<Value> lower_multilabel_margin_loss(Ctx& c) {
  Builder& b = c.b;
  MultiLabel m = multilabel_terms(c, "self", "target");
  const int64_t n = m.x.dim(0), k = m.x.dim(1);
  Value h = hlo::select(b, m.active, m.z, hlo::full(b, m.z.type, 0));
  Value per_sample =
      hlo::div(b, reduce::sum(b, h, {1, 2}), hlo::full(b, Type{h.dtype(), {n}}, static_cast<double>(k)));
  Value is_target = hlo::reshape(b, hlo::convert(b, m.is_target, c.out(1).dtype), c.out(1).shape);
  return {reduce_samples(c, per_sample, c.int_arg("reduction")), is_target};
}

// multilabel_margin_loss_backward(grad_output, self, target, reduction, is_target)
std::vector<Value> lower_multilabel_margin_loss_backward(Ctx& c) {
  Builder& b = c.b;
  MultiLabel m = multilabel_terms(c, "self", "target");
  const int64_t n = m.x.dim(0), k = m.x.dim(1);
  DType t = m.x.dtype();
  Value a = hlo::convert(b, m.active, t);
  // Non-target k gains one per active (j, k); the class of target j loses one per active (j, .).
  Value gain = reduce::sum(b, a, {1});        // [N, C(k)]
  Value per_target = reduce::sum(b, a, {2});  // [N, C(j)]
  Value lose = reduce::sum(b,
                           hlo::select(b, m.onehot, hlo::broadcast_in_dim(b, per_target, {n, k, k}, {0, 1}),
                                       hlo::full(b, Type{t, {n, k, k}}, 0)),
                           {1});
  Value gx = hlo::div(b, hlo::sub(b, gain, lose), hlo::full(b, Type{t, {n, k}}, static_cast<double>(k)));
  gx = hlo::mul(
      b, gx,
      hlo::broadcast_to(b, row_grad(b, c.tensor("grad_output"), n, c.int_arg("reduction"), t), {n, k}));
  return {hlo::reshape(b, hlo::convert(b, gx, c.out().dtype), c.out().shape)};
}

}  // namespace

TPU_LOWERING("aten::multi_margin_loss", lower_multi_margin_loss,
             reads({"self", "target", "weight", "reduction"}, {"p", "margin"}));
TPU_LOWERING("aten::multi_margin_loss_backward", lower_multi_margin_loss_backward,
             reads({"grad_output", "self", "target", "weight", "reduction"}, {"p", "margin"}));
TPU_LOWERING("aten::multilabel_margin_loss_forward", lower_multilabel_margin_loss,
             reads({"self", "target", "reduction"}));
TPU_LOWERING("aten::multilabel_margin_loss_backward", lower_multilabel_margin_loss_backward,
             reads({"grad_output", "self", "target", "reduction"}));

}  // namespace tpu::lowering
