// The _foreach_* family: one program for a whole list of tensors (torch.optim's default path on
// a PrivateUse1 device is foreach=True). Each list element is computed exactly as the per-tensor
// op would be (PyTorch's CPU "slow path" literally loops over at::add, at::addcdiv, ...):
// float16/bfloat16 in float32 opmath, one rounding at the end. Results are returned flattened,
// one value per output tensor.
//
// The arithmetic used by optimizers is written here; the long tail of unary math delegates to
// the per-tensor aten lowering of the same name (aten::exp, aten::erf, ...).
#include <cmath>
#include <stdexcept>
#include <string>

#include "lowering/core/hlo.h"
#include "lowering/core/kit.h"
#include "lowering/core/registry.h"

namespace tpu::lowering {

namespace {

using ir::DType;
using ir::Value;

size_t list_size(const Ctx& c) { return c.arg("self").values.size(); }

// The k-th value of a "second operand" argument: a list entry (Tensor[] or Scalar[]), or the
// single Scalar/Tensor shared by every element. With `per_element`, a 1-d Tensor holds one
// entry per list element (the `scalars` tensor of addcmul/addcdiv.Tensor).
Value nth(Ctx& c, std::string_view name, size_t k, bool per_element = false) {
  const Arg& a = c.arg(name);
  if (a.kind == Arg::Kind::TensorList) return a.values.at(k);
  if (per_element && a.kind == Arg::Kind::Tensor && a.value.rank() == 1)
    return hlo::reshape(c.b, hlo::slice_dim(c.b, a.value, 0, k, k + 1), {});
  return a.value;
}

// `v` in dtype `t`, broadcast to `shape`.
Value as(Ctx& c, const Value& v, DType t, const ir::Shape& shape) {
  return hlo::broadcast_to(c.b, hlo::convert(c.b, v, t), shape);
}

bool is_bool(DType t) { return t == DType::Bool; }

// ---- binary ops -------------------------------------------------------------------------

enum class Bin { Add, Sub, Mul, Div, Max, Min };

Value apply(Ctx& c, Bin op, const Value& x, const Value& y) {
  const DType t = x.dtype();
  switch (op) {
    case Bin::Add:
      return hlo::combine(c.b, is_bool(t) ? hlo::Combiner::Or : hlo::Combiner::Add, x, y);
    case Bin::Sub:
      return hlo::sub(c.b, x, y);
    case Bin::Mul:
      return hlo::combine(c.b, is_bool(t) ? hlo::Combiner::And : hlo::Combiner::Mul, x, y);
    case Bin::Div:
      return hlo::div(c.b, x, y);
    case Bin::Max:
      return hlo::max(c.b, x, y);
    case Bin::Min:
      return hlo::min(c.b, x, y);
  }
  return x;
}

// One result per list element k: fn(k, at) computes it from values that at(v) converts to
// output k's compute dtype and broadcasts to its shape; the result gets output k's dtype.
template <typename F>
std::vector<Value> each(Ctx& c, F fn) {
  std::vector<Value> outs;
  for (size_t k = 0; k < list_size(c); ++k) {
    const ir::Type& out = c.out(k);
    const DType t = compute_dtype(out.dtype);
    auto at = [&](const Value& v) { return as(c, v, t, out.shape); };
    outs.push_back(hlo::convert(c.b, fn(k, at), out.dtype));
  }
  return outs;
}

// self[k] op (alpha *) other[k], for every overload shape (List, Scalar, ScalarList, Tensor);
// only add and sub take alpha, and only in their List and Tensor overloads.
std::vector<Value> binary(Ctx& c, Bin op, bool with_alpha = false) {
  std::string_view other = c.declared_one_of({"other", "scalar", "scalars"});
  return each(c, [&](size_t k, auto at) {
    Value y = at(nth(c, other, k));
    if (with_alpha && c.has("alpha")) y = apply(c, Bin::Mul, at(c.tensor("alpha")), y);
    return apply(c, op, at(c.arg("self").values[k]), y);
  });
}

std::vector<Value> lower_add(Ctx& c) { return binary(c, Bin::Add, true); }
std::vector<Value> lower_add_no_alpha(Ctx& c) { return binary(c, Bin::Add); }
std::vector<Value> lower_sub(Ctx& c) { return binary(c, Bin::Sub, true); }
std::vector<Value> lower_sub_no_alpha(Ctx& c) { return binary(c, Bin::Sub); }
std::vector<Value> lower_mul(Ctx& c) { return binary(c, Bin::Mul); }
std::vector<Value> lower_div(Ctx& c) { return binary(c, Bin::Div); }
std::vector<Value> lower_maximum(Ctx& c) { return binary(c, Bin::Max); }
std::vector<Value> lower_minimum(Ctx& c) { return binary(c, Bin::Min); }

// ---- pointwise with two tensor lists ----------------------------------------------------

// addcmul/addcdiv(self, tensor1, tensor2, value): self + value * t1 * t2 (or / t2), evaluated
// left to right as the CPU kernel does: self + ((value * t1) op t2).
std::vector<Value> addc(Ctx& c, bool divide) {
  std::string_view value = c.declared_one_of({"value", "scalars"});
  return each(c, [&](size_t k, auto at) {
    Value t1 = at(c.arg("tensor1").values[k]), t2 = at(c.arg("tensor2").values[k]);
    Value prod = c.has(value) ? apply(c, Bin::Mul, at(nth(c, value, k, true)), t1) : t1;
    prod = divide ? hlo::div(c.b, prod, t2) : apply(c, Bin::Mul, prod, t2);
    return apply(c, Bin::Add, at(c.arg("self").values[k]), prod);
  });
}

std::vector<Value> lower_addcmul(Ctx& c) { return addc(c, false); }
std::vector<Value> lower_addcdiv(Ctx& c) { return addc(c, true); }

// lerp(self, end, weight): PyTorch's two-sided formula, exact at weight 0 and 1:
// |w| < 0.5 ? self + w * (end - self) : end - (end - self) * (1 - w).
std::vector<Value> lower_lerp(Ctx& c) {
  std::string_view weight = c.declared_one_of({"weight", "weights"});
  return each(c, [&](size_t k, auto at) {
    Value self = at(c.arg("self").values[k]), end = at(c.arg("tensors1").values[k]);
    Value w = at(nth(c, weight, k));
    Value diff = hlo::sub(c.b, end, self);
    Value small = hlo::compare(c.b, hlo::abs(c.b, w), hlo::full(c.b, w.type, 0.5), "LT");
    Value lo = hlo::add(c.b, self, hlo::mul(c.b, w, diff));
    Value hi = hlo::sub(c.b, end, hlo::mul(c.b, diff, hlo::sub(c.b, hlo::full(c.b, w.type, 1), w)));
    return hlo::select(c.b, small, lo, hi);
  });
}

// clamp_min / clamp_max: maximum / minimum with the bound (NaN in either propagates).
std::vector<Value> lower_clamp_min(Ctx& c) { return binary(c, Bin::Max); }
std::vector<Value> lower_clamp_max(Ctx& c) { return binary(c, Bin::Min); }

// ---- unary ops --------------------------------------------------------------------------

template <typename F>
std::vector<Value> unary_each(Ctx& c, F f) {
  return each(c, [&](size_t k, auto at) { return f(at(c.arg("self").values[k])); });
}

std::vector<Value> lower_sqrt(Ctx& c) {
  return unary_each(c, [&](const Value& x) { return hlo::sqrt(c.b, x); });
}
std::vector<Value> lower_rsqrt(Ctx& c) {
  return unary_each(c, [&](const Value& x) { return hlo::rsqrt(c.b, x); });
}
std::vector<Value> lower_neg(Ctx& c) {
  return unary_each(c, [&](const Value& x) { return hlo::neg(c.b, x); });
}
std::vector<Value> lower_abs(Ctx& c) {
  return unary_each(c, [&](const Value& x) { return is_bool(x.dtype()) ? x : hlo::abs(c.b, x); });
}
std::vector<Value> lower_reciprocal(Ctx& c) {
  return unary_each(c, [&](const Value& x) { return hlo::div(c.b, hlo::full(c.b, x.type, 1), x); });
}
std::vector<Value> lower_zero(Ctx& c) {
  std::vector<Value> outs;
  for (size_t k = 0; k < list_size(c); ++k) outs.push_back(hlo::full(c.b, c.out(k), 0));
  return outs;
}
std::vector<Value> lower_clone(Ctx& c) {
  std::vector<Value> outs;
  for (size_t k = 0; k < list_size(c); ++k)
    outs.push_back(hlo::convert(c.b, c.arg("self").values[k], c.out(k).dtype));
  return outs;
}
// copy(self, src, non_blocking): src converted to each self's dtype and broadcast to its shape.
std::vector<Value> lower_copy(Ctx& c) {
  std::vector<Value> outs;
  for (size_t k = 0; k < list_size(c); ++k)
    outs.push_back(as(c, c.arg("src").values[k], c.out(k).dtype, c.out(k).shape));
  return outs;
}

// The remaining unary math reuses the per-tensor lowering (aten::exp, ...) for each element,
// so both paths share one definition.
Value delegate(Ctx& c, const std::string& op, std::vector<Arg> args, const ir::Type& out) {
  const Lowering* l = find_lowering(op);
  if (!l) throw std::runtime_error("torch_tpu: no lowering for " + op + " (used by its _foreach_ form)");
  Ctx sub{c.b, std::move(args), {out}, c.rng_state, {}, l};
  Value r = l->fn(sub).at(0);
  c.checks.insert(c.checks.end(), sub.checks.begin(), sub.checks.end());
  return r;
}

Arg tensor_arg(const Value& v) {
  Arg a;
  a.kind = Arg::Kind::Tensor;
  a.value = v;
  return a;
}

template <const char* Op>
std::vector<Value> lower_delegated_unary(Ctx& c) {
  std::vector<Value> outs;
  for (size_t k = 0; k < list_size(c); ++k)
    outs.push_back(delegate(c, Op, {tensor_arg(c.arg("self").values[k])}, c.out(k)));
  return outs;
}

// pow.List: Tensor_Tensor per element; pow.Scalar: Tensor_Scalar with the (static) exponent
// passed through, so the per-tensor lowering can pick its formula; pow.ScalarAndTensor: a
// scalar base with a list of exponents.
std::vector<Value> lower_pow_list(Ctx& c) {
  std::vector<Value> outs;
  for (size_t k = 0; k < list_size(c); ++k)
    outs.push_back(delegate(c, "aten::pow.Tensor_Tensor",
                            {tensor_arg(c.arg("self").values[k]), tensor_arg(c.arg("exponent").values[k])},
                            c.out(k)));
  return outs;
}

std::vector<Value> lower_pow_scalar(Ctx& c) {
  std::vector<Value> outs;
  for (size_t k = 0; k < list_size(c); ++k)
    outs.push_back(delegate(c, "aten::pow.Tensor_Scalar",
                            {tensor_arg(c.arg("self").values[k]), c.arg("exponent")}, c.out(k)));
  return outs;
}

std::vector<Value> lower_pow_scalar_and_tensor(Ctx& c) {
  std::vector<Value> outs;
  for (size_t k = 0; k < c.arg("exponent").values.size(); ++k)
    outs.push_back(
        delegate(c, "aten::pow.Scalar", {c.arg("self"), tensor_arg(c.arg("exponent").values[k])}, c.out(k)));
  return outs;
}

// ---- reductions -------------------------------------------------------------------------

// norm.Scalar(self, ord (static), dtype): the vector norm of each tensor as a 0-d result,
// accumulated in float32 for half types as linalg_vector_norm does.
std::vector<Value> lower_norm(Ctx& c) {
  const double ord = c.has("ord") ? c.arg("ord").d : 2.0;
  std::vector<Value> outs;
  for (size_t k = 0; k < list_size(c); ++k) {
    const ir::Type& out = c.out(k);
    const DType t = compute_dtype(out.dtype);
    Value x0 = c.arg("self").values[k];
    if (ir::is_complex(x0.dtype())) x0 = hlo::abs(c.b, x0);
    Value x = hlo::abs(c.b, hlo::convert(c.b, x0, t));
    std::vector<int64_t> dims;
    for (int i = 0; i < x.rank(); ++i) dims.push_back(i);
    Value r;
    if (std::isinf(ord)) {
      Value init = hlo::constant(c.b, t, ord > 0 ? 0.0 : INFINITY);
      if (ord < 0 && x.type.numel() == 0)
        throw std::invalid_argument("linalg.vector_norm cannot compute the -inf norm on an empty tensor");
      r = hlo::reduce(c.b, x, init, dims, ord > 0 ? hlo::Combiner::Max : hlo::Combiner::Min);
    } else if (ord == 0) {
      Value nz = hlo::convert(c.b, hlo::compare(c.b, x, hlo::full(c.b, x.type, 0), "NE"), t);
      r = hlo::reduce(c.b, nz, hlo::constant(c.b, t, 0), dims, hlo::Combiner::Add);
    } else if (ord == 1) {
      r = hlo::reduce(c.b, x, hlo::constant(c.b, t, 0), dims, hlo::Combiner::Add);
    } else if (ord == 2) {
      r = hlo::reduce(c.b, hlo::mul(c.b, x, x), hlo::constant(c.b, t, 0), dims, hlo::Combiner::Add);
      r = hlo::sqrt(c.b, r);
    } else {
      Value p = hlo::full(c.b, x.type, ord);
      Value s = hlo::reduce(c.b, hlo::power(c.b, x, p), hlo::constant(c.b, t, 0), dims, hlo::Combiner::Add);
      Value inv = hlo::constant(c.b, t, 1.0 / ord);
      r = hlo::power(c.b, s, inv);
    }
    outs.push_back(hlo::convert(c.b, r, out.dtype));
  }
  return outs;
}

// max(self): the maximum of each tensor (NaN propagates), as a 0-d result.
std::vector<Value> lower_max(Ctx& c) {
  std::vector<Value> outs;
  for (size_t k = 0; k < list_size(c); ++k) {
    const Value& x = c.arg("self").values[k];
    std::vector<int64_t> dims;
    for (int i = 0; i < x.rank(); ++i) dims.push_back(i);
    Value init = ir::is_floating(x.dtype()) ? hlo::constant(c.b, x.dtype(), -INFINITY)
                 : x.dtype() == DType::I64  ? hlo::constant_int(c.b, x.dtype(), INT64_MIN)
                 : ir::is_unsigned(x.dtype())
                     ? hlo::constant_int(c.b, x.dtype(), 0)
                     : hlo::constant_int(c.b, x.dtype(), -(int64_t{1} << (8 * ir::itemsize(x.dtype()) - 1)));
    outs.push_back(
        hlo::reduce(c.b, x, init, dims, x.dtype() == DType::Bool ? hlo::Combiner::Or : hlo::Combiner::Max));
  }
  return outs;
}

#define TPU_UNARY_NAME(name) constexpr char k_##name[] = "aten::" #name;
TPU_UNARY_NAME(exp)
TPU_UNARY_NAME(expm1)
TPU_UNARY_NAME(log)
TPU_UNARY_NAME(log10)
TPU_UNARY_NAME(log1p)
TPU_UNARY_NAME(log2)
TPU_UNARY_NAME(sin)
TPU_UNARY_NAME(cos)
TPU_UNARY_NAME(tan)
TPU_UNARY_NAME(asin)
TPU_UNARY_NAME(acos)
TPU_UNARY_NAME(atan)
TPU_UNARY_NAME(sinh)
TPU_UNARY_NAME(cosh)
TPU_UNARY_NAME(tanh)
TPU_UNARY_NAME(sigmoid)
TPU_UNARY_NAME(erf)
TPU_UNARY_NAME(erfc)
TPU_UNARY_NAME(lgamma)
TPU_UNARY_NAME(sign)
TPU_UNARY_NAME(ceil)
TPU_UNARY_NAME(floor)
TPU_UNARY_NAME(round)
TPU_UNARY_NAME(trunc)
TPU_UNARY_NAME(frac)
#undef TPU_UNARY_NAME

}  // namespace

TPU_LOWERING("aten::_foreach_add.List", lower_add, reads({"self", "other", "alpha"}));
TPU_LOWERING("aten::_foreach_add.Scalar", lower_add_no_alpha, reads({"self", "scalar"}));
TPU_LOWERING("aten::_foreach_add.ScalarList", lower_add_no_alpha, reads({"self", "scalars"}));
TPU_LOWERING("aten::_foreach_add.Tensor", lower_add, reads({"self", "other", "alpha"}));
TPU_LOWERING("aten::_foreach_sub.List", lower_sub, reads({"self", "other", "alpha"}));
TPU_LOWERING("aten::_foreach_sub.Scalar", lower_sub_no_alpha, reads({"self", "scalar"}));
TPU_LOWERING("aten::_foreach_sub.ScalarList", lower_sub_no_alpha, reads({"self", "scalars"}));
TPU_LOWERING("aten::_foreach_mul.List", lower_mul, reads({"self", "other"}));
TPU_LOWERING("aten::_foreach_mul.Scalar", lower_mul, reads({"self", "scalar"}));
TPU_LOWERING("aten::_foreach_mul.ScalarList", lower_mul, reads({"self", "scalars"}));
TPU_LOWERING("aten::_foreach_mul.Tensor", lower_mul, reads({"self", "other"}));
TPU_LOWERING("aten::_foreach_div.List", lower_div, reads({"self", "other"}));
TPU_LOWERING("aten::_foreach_div.Scalar", lower_div, reads({"self", "scalar"}));
TPU_LOWERING("aten::_foreach_div.ScalarList", lower_div, reads({"self", "scalars"}));
TPU_LOWERING("aten::_foreach_div.Tensor", lower_div, reads({"self", "other"}));
TPU_LOWERING("aten::_foreach_maximum.List", lower_maximum, reads({"self", "other"}));
TPU_LOWERING("aten::_foreach_maximum.Scalar", lower_maximum, reads({"self", "scalar"}));
TPU_LOWERING("aten::_foreach_maximum.ScalarList", lower_maximum, reads({"self", "scalars"}));
TPU_LOWERING("aten::_foreach_minimum.List", lower_minimum, reads({"self", "other"}));
TPU_LOWERING("aten::_foreach_minimum.Scalar", lower_minimum, reads({"self", "scalar"}));
TPU_LOWERING("aten::_foreach_minimum.ScalarList", lower_minimum, reads({"self", "scalars"}));
TPU_LOWERING("aten::_foreach_clamp_min.List", lower_clamp_min, reads({"self", "other"}));
TPU_LOWERING("aten::_foreach_clamp_min.Scalar", lower_clamp_min, reads({"self", "scalar"}));
TPU_LOWERING("aten::_foreach_clamp_min.ScalarList", lower_clamp_min, reads({"self", "scalars"}));
TPU_LOWERING("aten::_foreach_clamp_max.List", lower_clamp_max, reads({"self", "other"}));
TPU_LOWERING("aten::_foreach_clamp_max.Scalar", lower_clamp_max, reads({"self", "scalar"}));
TPU_LOWERING("aten::_foreach_clamp_max.ScalarList", lower_clamp_max, reads({"self", "scalars"}));
TPU_LOWERING("aten::_foreach_addcmul.Scalar", lower_addcmul, reads({"self", "tensor1", "tensor2", "value"}));
TPU_LOWERING("aten::_foreach_addcmul.ScalarList", lower_addcmul,
             reads({"self", "tensor1", "tensor2", "scalars"}));
TPU_LOWERING("aten::_foreach_addcmul.Tensor", lower_addcmul,
             reads({"self", "tensor1", "tensor2", "scalars"}));
TPU_LOWERING("aten::_foreach_addcdiv.Scalar", lower_addcdiv, reads({"self", "tensor1", "tensor2", "value"}));
TPU_LOWERING("aten::_foreach_addcdiv.ScalarList", lower_addcdiv,
             reads({"self", "tensor1", "tensor2", "scalars"}));
TPU_LOWERING("aten::_foreach_addcdiv.Tensor", lower_addcdiv,
             reads({"self", "tensor1", "tensor2", "scalars"}));
TPU_LOWERING("aten::_foreach_lerp.List", lower_lerp, reads({"self", "tensors1", "weights"}));
TPU_LOWERING("aten::_foreach_lerp.Scalar", lower_lerp, reads({"self", "tensors1", "weight"}));
TPU_LOWERING("aten::_foreach_lerp.ScalarList", lower_lerp, reads({"self", "tensors1", "weight"}));
TPU_LOWERING("aten::_foreach_sqrt", lower_sqrt, reads({"self"}));
TPU_LOWERING("aten::_foreach_rsqrt", lower_rsqrt, reads({"self"}));
TPU_LOWERING("aten::_foreach_neg", lower_neg, reads({"self"}));
TPU_LOWERING("aten::_foreach_abs", lower_abs, reads({"self"}));
TPU_LOWERING("aten::_foreach_reciprocal", lower_reciprocal, reads({"self"}));
TPU_LOWERING("aten::_foreach_zero", lower_zero, reads({"self"}));
TPU_LOWERING("aten::_foreach_clone", lower_clone, reads({"self"}));
TPU_LOWERING("aten::_foreach_copy", lower_copy, reads({"self", "src"}));
TPU_LOWERING("aten::_foreach_pow.List", lower_pow_list, reads({"self", "exponent"}));
TPU_LOWERING("aten::_foreach_pow.Scalar", lower_pow_scalar, reads({"self"}, {"exponent"}));
TPU_LOWERING("aten::_foreach_pow.ScalarAndTensor", lower_pow_scalar_and_tensor,
             reads({"exponent"}, {"self"}));
TPU_LOWERING("aten::_foreach_norm.Scalar", lower_norm, reads({"self"}, {"ord"}));
TPU_LOWERING("aten::_foreach_max", lower_max, reads({"self"}));
TPU_LOWERING("aten::_foreach_exp", lower_delegated_unary<k_exp>, reads({"self"}));
TPU_LOWERING("aten::_foreach_expm1", lower_delegated_unary<k_expm1>, reads({"self"}));
TPU_LOWERING("aten::_foreach_log", lower_delegated_unary<k_log>, reads({"self"}));
TPU_LOWERING("aten::_foreach_log10", lower_delegated_unary<k_log10>, reads({"self"}));
TPU_LOWERING("aten::_foreach_log1p", lower_delegated_unary<k_log1p>, reads({"self"}));
TPU_LOWERING("aten::_foreach_log2", lower_delegated_unary<k_log2>, reads({"self"}));
TPU_LOWERING("aten::_foreach_sin", lower_delegated_unary<k_sin>, reads({"self"}));
TPU_LOWERING("aten::_foreach_cos", lower_delegated_unary<k_cos>, reads({"self"}));
TPU_LOWERING("aten::_foreach_tan", lower_delegated_unary<k_tan>, reads({"self"}));
TPU_LOWERING("aten::_foreach_asin", lower_delegated_unary<k_asin>, reads({"self"}));
TPU_LOWERING("aten::_foreach_acos", lower_delegated_unary<k_acos>, reads({"self"}));
TPU_LOWERING("aten::_foreach_atan", lower_delegated_unary<k_atan>, reads({"self"}));
TPU_LOWERING("aten::_foreach_sinh", lower_delegated_unary<k_sinh>, reads({"self"}));
TPU_LOWERING("aten::_foreach_cosh", lower_delegated_unary<k_cosh>, reads({"self"}));
TPU_LOWERING("aten::_foreach_tanh", lower_delegated_unary<k_tanh>, reads({"self"}));
TPU_LOWERING("aten::_foreach_sigmoid", lower_delegated_unary<k_sigmoid>, reads({"self"}));
TPU_LOWERING("aten::_foreach_erf", lower_delegated_unary<k_erf>, reads({"self"}));
TPU_LOWERING("aten::_foreach_erfc", lower_delegated_unary<k_erfc>, reads({"self"}));
TPU_LOWERING("aten::_foreach_lgamma", lower_delegated_unary<k_lgamma>, reads({"self"}));
TPU_LOWERING("aten::_foreach_sign", lower_delegated_unary<k_sign>, reads({"self"}));
TPU_LOWERING("aten::_foreach_ceil", lower_delegated_unary<k_ceil>, reads({"self"}));
TPU_LOWERING("aten::_foreach_floor", lower_delegated_unary<k_floor>, reads({"self"}));
TPU_LOWERING("aten::_foreach_round", lower_delegated_unary<k_round>, reads({"self"}));
TPU_LOWERING("aten::_foreach_trunc", lower_delegated_unary<k_trunc>, reads({"self"}));
TPU_LOWERING("aten::_foreach_frac", lower_delegated_unary<k_frac>, reads({"self"}));

}  // namespace tpu::lowering
