// native_layer_norm / native_group_norm and their backward ops. Statistics are computed in
// float for bf16/f16 (two passes: mean, then mean squared deviation), and mean/rstd come out in
// the dtypes and keepdim-style shapes the meta kernels give (float when a bf16 input has float
// weights, as on CPU).
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

struct Stats {
  Value mean, rstd;  // reduced over dims, accumulation dtype
};

// cpu_rsqrt: 1 / sqrt(var + eps) correctly rounded, as CPU computes it. XLA's f32 rsqrt can be an
// ulp off (and XLA rewrites 1 / sqrt into it), which the bf16 path's fma form below makes
// visible, so it is computed in f64 and rounded once.
Stats stats(Builder& b, const Value& x, const std::vector<int64_t>& dims, const Value& eps,
            bool cpu_rsqrt = false) {
  double n = static_cast<double>(reduce::count(x.shape(), dims));
  Value mean = reduce::sum(b, x, dims);
  mean = hlo::div(b, mean, hlo::full(b, mean.type, n));
  Value dev = hlo::sub(b, x, reduce::expand_back(b, mean, x.shape(), dims));
  Value var = reduce::sum(b, hlo::mul(b, dev, dev), dims);
  var = hlo::div(b, var, hlo::full(b, var.type, n));
  Value e = hlo::broadcast_in_dim(b, hlo::convert(b, eps, var.dtype()), var.shape(), {});
  Value ve = hlo::add(b, var, e);
  if (cpu_rsqrt) {
    Value r = hlo::rsqrt(b, hlo::convert(b, ve, DType::F64));
    return {mean, hlo::convert(b, r, ve.dtype())};
  }
  return {mean, hlo::rsqrt(b, ve)};
}

std::vector<int64_t> range(int64_t lo, int64_t hi) {
  std::vector<int64_t> v;
  for (int64_t i = lo; i < hi; ++i) v.push_back(i);
  return v;
}

// native_layer_norm(input, normalized_shape, weight?, bias?, eps) -> (out, mean, rstd)
std::vector<Value> lower_layer_norm(Ctx& c) {
  Builder& b = c.b;
  Value x = c.tensor("input");
  DType acc = compute_dtype(x.dtype());
  x = hlo::convert(b, x, acc);
  int64_t axis = x.rank() - static_cast<int64_t>(c.ints("normalized_shape").size());
  std::vector<int64_t> dims = range(axis, x.rank());
  bool reduced = acc != c.tensor("input").dtype();
  Stats s = stats(b, x, dims, c.tensor("eps"), reduced);
  Value y;
  if (reduced) {
    // bf16/f16: CPU normalises as fma(x, rstd, -mean * rstd) in float, which for a tiny
    // variance differs visibly from (x - mean) * rstd; the fma is exact in f64 (a product of two
    // floats fits) up to the final rounding.
    Value nb = hlo::neg(b, hlo::mul(b, s.mean, s.rstd));
    auto wide = [&](const Value& v) {
      return hlo::convert(b, reduce::expand_back(b, v, x.shape(), dims), DType::F64);
    };
    Value prod = hlo::mul(b, hlo::convert(b, x, DType::F64), wide(s.rstd));
    y = hlo::convert(b, hlo::add(b, prod, wide(nb)), acc);
  } else {
    y = hlo::mul(b, hlo::sub(b, x, reduce::expand_back(b, s.mean, x.shape(), dims)),
                 reduce::expand_back(b, s.rstd, x.shape(), dims));
  }
  if (c.has("weight"))
    y = hlo::mul(b, y, hlo::broadcast_to(b, hlo::convert(b, c.tensor("weight"), acc), x.shape()));
  if (c.has("bias"))
    y = hlo::add(b, y, hlo::broadcast_to(b, hlo::convert(b, c.tensor("bias"), acc), x.shape()));
  // CPU stores a bf16/f16 input's statistics in that dtype unless a parameter is float
  // (is_mixed_type); the results keep the meta kernel's float dtype with the rounded values, which
  // the backward then reads as CPU's does.
  bool mixed = (c.has("weight") && c.tensor("weight").dtype() == DType::F32) ||
               (c.has("bias") && c.tensor("bias").dtype() == DType::F32);
  DType stored = mixed ? acc : c.tensor("input").dtype();
  return {finish(c, y, 0), finish(c, precision::round_to(b, s.mean, stored), 1),
          finish(c, precision::round_to(b, s.rstd, stored), 2)};
}

// native_layer_norm_backward(grad_out, input, normalized_shape, mean, rstd, weight?, bias?,
// output_mask) -> (grad_input, grad_weight, grad_bias):
//   xhat = (x - mean) * rstd, dxhat = g * w,
//   dx = rstd * (dxhat - mean(dxhat) - xhat * mean(dxhat * xhat))   (over normalized dims)
//   dw = sum_batch(g * xhat), db = sum_batch(g)
std::vector<Value> lower_layer_norm_backward(Ctx& c) {
  Builder& b = c.b;
  Value x = c.tensor("input");
  DType acc = compute_dtype(x.dtype());
  x = hlo::convert(b, x, acc);
  Value g = hlo::convert(b, c.tensor("grad_out"), acc);
  int64_t axis = x.rank() - static_cast<int64_t>(c.ints("normalized_shape").size());
  std::vector<int64_t> dims = range(axis, x.rank()), batch = range(0, axis);
  double n = static_cast<double>(reduce::count(x.shape(), dims));
  Value mean = hlo::broadcast_to(b, hlo::convert(b, c.tensor("mean"), acc), x.shape());
  Value rstd = hlo::broadcast_to(b, hlo::convert(b, c.tensor("rstd"), acc), x.shape());
  Value xhat = hlo::mul(b, hlo::sub(b, x, mean), rstd);
  Value dxhat =
      c.has("weight")
          ? hlo::mul(b, g, hlo::broadcast_to(b, hlo::convert(b, c.tensor("weight"), acc), x.shape()))
          : g;
  auto mean_back = [&](const Value& v) {
    Value s = reduce::sum(b, v, dims);
    s = hlo::div(b, s, hlo::full(b, s.type, n));
    return reduce::expand_back(b, s, x.shape(), dims);
  };
  Value dx;
  if (output_wanted(c, 0)) {
    Value inner = hlo::sub(b, hlo::sub(b, dxhat, mean_back(dxhat)),
                           hlo::mul(b, xhat, mean_back(hlo::mul(b, dxhat, xhat))));
    dx = hlo::mul(b, rstd, inner);
  }
  Value dw, db;
  if (c.has("weight") && output_wanted(c, 1)) dw = reduce::sum(b, hlo::mul(b, g, xhat), batch);
  if (c.has("bias") && output_wanted(c, 2)) db = reduce::sum(b, g, batch);
  return masked_outputs(c, {dx, dw, db});
}

// Group norm's input as [N, group, C/group, HxW] in its accumulation dtype.
struct Groups {
  int64_t n, ch, hw, g;
  DType acc;
  Shape s4;
  Value x4;
};

Groups groups(Ctx& c) {
  Value x = c.tensor("input");
  DType acc = compute_dtype(x.dtype());
  int64_t n = c.int_arg("N"), ch = c.int_arg("C"), hw = c.int_arg("HxW"), g = c.int_arg("group");
  Shape s4 = {n, g, ch / g, hw};
  return {n, ch, hw, g, acc, s4, hlo::reshape(c.b, hlo::convert(c.b, x, acc), s4)};
}

// native_group_norm(input, weight?, bias?, N, C, HxW, group, eps) -> (out, mean, rstd);
// statistics per (sample, group) over C/group channels and the spatial positions.
std::vector<Value> lower_group_norm(Ctx& c) {
  Builder& b = c.b;
  auto [n, ch, hw, g, acc, s4, x4] = groups(c);
  Stats s = stats(b, x4, {2, 3}, c.tensor("eps"));
  Value y = hlo::mul(b, hlo::sub(b, x4, hlo::broadcast_in_dim(b, s.mean, s4, {0, 1})),
                     hlo::broadcast_in_dim(b, s.rstd, s4, {0, 1}));
  auto per_channel = [&](std::string_view name) {
    Value v = hlo::reshape(b, hlo::convert(b, c.tensor(name), acc), {g, ch / g});
    return hlo::broadcast_in_dim(b, v, s4, {1, 2});
  };
  if (c.has("weight")) y = hlo::mul(b, y, per_channel("weight"));
  if (c.has("bias")) y = hlo::add(b, y, per_channel("bias"));
  return {finish(c, y, 0), finish(c, s.mean, 1), finish(c, s.rstd, 2)};
}

// native_group_norm_backward(grad_out, input, mean, rstd, weight?, N, C, HxW, group,
// output_mask): the layer-norm formulas per (sample, group), with dw/db summed per channel.
std::vector<Value> lower_group_norm_backward(Ctx& c) {
  Builder& b = c.b;
  auto [n, ch, hw, g, acc, s4, x4] = groups(c);
  Value g4 = hlo::reshape(b, hlo::convert(b, c.tensor("grad_out"), acc), s4);
  auto per_group = [&](std::string_view name) {
    Value v = hlo::reshape(b, hlo::convert(b, c.tensor(name), acc), {n, g});
    return hlo::broadcast_in_dim(b, v, s4, {0, 1});
  };
  Value rstd = per_group("rstd");
  Value xhat = hlo::mul(b, hlo::sub(b, x4, per_group("mean")), rstd);
  Value dxhat = g4;
  if (c.has("weight")) {
    Value w = hlo::reshape(b, hlo::convert(b, c.tensor("weight"), acc), {g, ch / g});
    dxhat = hlo::mul(b, g4, hlo::broadcast_in_dim(b, w, s4, {1, 2}));
  }
  double d = static_cast<double>((ch / g) * hw);
  auto mean_back = [&](const Value& v) {
    Value s = reduce::sum(b, v, {2, 3});
    s = hlo::div(b, s, hlo::full(b, s.type, d));
    return hlo::broadcast_in_dim(b, s, s4, {0, 1});
  };
  Value dx, dw, db;
  if (output_wanted(c, 0)) {
    Value inner = hlo::sub(b, hlo::sub(b, dxhat, mean_back(dxhat)),
                           hlo::mul(b, xhat, mean_back(hlo::mul(b, dxhat, xhat))));
    dx = hlo::mul(b, rstd, inner);
  }
  if (output_wanted(c, 1)) dw = reduce::sum(b, hlo::mul(b, g4, xhat), {0, 3});
  if (output_wanted(c, 2)) db = reduce::sum(b, g4, {0, 3});
  return masked_outputs(c, {dx, dw, db});
}

// Padded execution: rows are normalized on their own, so only the normalized (trailing) dimensions
// must be whole. Backward, weight and bias gradients sum over the rows: the padding's
// contribution is zero once its gradient, input and statistics are.
void require_whole_rows(Ctx& c, const char* name) {
  const Dims& dims = c.dims(name);
  const size_t first = c.tensor(name).rank() - c.ints("normalized_shape").size();
  for (size_t d = first; d < dims.size(); ++d)
    if (dims[d].valid()) throw NotPaddable("layer norm over a dynamic dimension");
}
std::vector<Value> lower_layer_norm_padded(Ctx& c) {
  require_whole_rows(c, "input");
  return lower_layer_norm(c);
}
std::vector<Value> lower_layer_norm_backward_padded(Ctx& c) {
  require_whole_rows(c, "input");
  for (const char* name : {"grad_out", "input", "mean", "rstd"}) {
    Arg& a = c.args[c.index(name)];
    a.value = fill_padding(c.b, a.value, a.dims, hlo::constant(c.b, a.value.dtype(), 0));
  }
  return lower_layer_norm_backward(c);
}

}  // namespace

TPU_PADDED("aten::native_layer_norm", custom(lower_layer_norm_padded));
TPU_PADDED("aten::native_layer_norm_backward", custom(lower_layer_norm_backward_padded));

TPU_LOWERING("aten::native_layer_norm", lower_layer_norm,
             reads({"input", "normalized_shape", "weight", "bias", "eps"}));
TPU_LOWERING("aten::native_layer_norm_backward", lower_layer_norm_backward,
             reads({"grad_out", "input", "normalized_shape", "mean", "rstd", "weight", "bias",
                    "output_mask"}));
TPU_LOWERING("aten::native_group_norm", lower_group_norm,
             reads({"input", "weight", "bias", "N", "C", "HxW", "group", "eps"}));
TPU_LOWERING("aten::native_group_norm_backward", lower_group_norm_backward,
             reads({"grad_out", "input", "mean", "rstd", "weight", "N", "C", "HxW", "group", "output_mask"}));

}  // namespace tpu::lowering
