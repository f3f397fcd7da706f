// Random ops: in-place samplers used by rand/randn/randint/init, bernoulli and dropout, the
// torch.normal overloads with tensor parameters, and the continuous/geometric samplers of
// Tensor.cauchy_, log_normal_ and geometric_ (inverse CDFs of one uniform draw, as CPU's).
#include <cmath>

#include "lowering/core/dynamic.h"
#include "lowering/core/elementwise_ops.h"
#include "lowering/core/reduce_util.h"
#include "lowering/creation/random_bits.h"

namespace tpu::lowering {

namespace {

using ir::DType;
using ir::Value;

DType sample_type(DType t) { return t == DType::F64 ? DType::F64 : DType::F32; }

// mean + std * z for arguments mean_i and std_i, in the sample type of the output.
Value normal_sample(Ctx& c, std::string_view mean_arg, std::string_view std_arg) {
  const ir::Type& out = c.out();
  DType st = sample_type(out.dtype);
  Value z = standard_normal(c.b, c.rng_state, out.shape, st);
  return hlo::add(c.b, hlo::mul(c.b, z, operand(c, std_arg, st, out.shape)),
                  operand(c, mean_arg, st, out.shape));
}

// normal_(self, mean, std, *, generator)
std::vector<Value> lower_normal_(Ctx& c) {
  return {hlo::convert(c.b, normal_sample(c, "mean", "std"), c.out().dtype)};
}

// normal.Tensor_Tensor(mean, std), normal.Tensor_float(mean, std) and normal.float_Tensor(mean,
// std): mean + std * z in the broadcast shape. A negative (or NaN) element of a std tensor is
// CPU's error, checked at run time; a float std was checked by the meta kernel.
std::vector<Value> lower_normal_tensors(Ctx& c) {
  if (c.arg("std").kind == Arg::Kind::Tensor) {
    Value ok = ew::ge(c.b, c.tensor("std"), 0);
    c.require(reduce::min(c.b, ok, reduce::dims_or_all({}, ok.rank())),
              "normal expects all elements of std >= 0.0");
  }
  return {hlo::convert(c.b, normal_sample(c, "mean", "std"), c.out().dtype)};
}

// cauchy_(self, median, sigma): median + sigma * tan(pi * (u - 1/2)), u in (0, 1).
std::vector<Value> lower_cauchy_(Ctx& c) {
  const ir::Type& out = c.out();
  DType st = sample_type(out.dtype);
  Value state = c.rng_state;
  Value u = next_uniform_open(c.b, state, out.shape, st);
  Value angle = ew::mul_c(c.b, ew::add_c(c.b, u, -0.5), M_PI);
  Value v = hlo::add(c.b, operand(c, "median", st, out.shape),
                     hlo::mul(c.b, operand(c, "sigma", st, out.shape), hlo::tan(c.b, angle)));
  return {hlo::convert(c.b, v, out.dtype)};
}

// log_normal_(self, mean, std): exp(mean + std * z).
std::vector<Value> lower_log_normal_(Ctx& c) {
  return {hlo::convert(c.b, ew::exp(c.b, normal_sample(c, "mean", "std")), c.out().dtype)};
}

// geometric_(self, p): the number of Bernoulli(p) trials up to the first success,
// ceil(log(u) / log1p(-p)) with u in (0, 1) so the result is >= 1 and finite.
std::vector<Value> lower_geometric_(Ctx& c) {
  const ir::Type& out = c.out();
  DType st = out.dtype == DType::F64 ? DType::F64 : DType::F32;
  Value state = c.rng_state;
  Value u = next_uniform_open(c.b, state, out.shape, st);
  Value p = operand(c, "p", st, out.shape);
  Value v = hlo::ceil(c.b, hlo::div(c.b, ew::log(c.b, u), ew::log1p(c.b, hlo::neg(c.b, p))));
  return {hlo::convert(c.b, v, out.dtype)};
}

// uniform_(self, from, to, *, generator)
std::vector<Value> lower_uniform_(Ctx& c) {
  const ir::Type& out = c.out();
  DType st = sample_type(out.dtype);
  Value u = uniform01(c.b, c.rng_state, out.shape, st);
  Value from = operand(c, "from", st, out.shape), to = operand(c, "to", st, out.shape);
  Value v = hlo::add(c.b, from, hlo::mul(c.b, u, hlo::sub(c.b, to, from)));
  return {hlo::convert(c.b, v, out.dtype)};
}

// exponential_(self, lambd, *, generator): -log(1 - u) / lambd
std::vector<Value> lower_exponential_(Ctx& c) {
  const ir::Type& out = c.out();
  DType st = sample_type(out.dtype);
  Value u = uniform01(c.b, c.rng_state, out.shape, st);
  Value v = hlo::neg(c.b, hlo::log1p(c.b, hlo::neg(c.b, u)));
  v = hlo::div(c.b, v, operand(c, "lambd", st, out.shape));
  return {hlo::convert(c.b, v, out.dtype)};
}

// bernoulli_.float(self, p, *, generator) and bernoulli_.Tensor(self, p_tensor, *, generator)
std::vector<Value> lower_bernoulli_(Ctx& c) {
  const ir::Type& out = c.out();
  DType st = sample_type(c.tensor("p").dtype() == DType::F64 ? DType::F64 : out.dtype);
  Value u = uniform01(c.b, c.rng_state, out.shape, st);
  Value hit = hlo::compare(c.b, u, operand(c, "p", st, out.shape), "LT");
  return {hlo::convert(c.b, hit, out.dtype)};
}

// random_.from(self, from, to?, *, generator): integers in [from, to)
Value random_range(Ctx& c, Value low, Value high) {
  const ir::Type& out = c.out();
  Value r = random_u64(c.b, c.rng_state, out.shape);
  Value lo = hlo::broadcast_to(c.b, low, out.shape), hi = hlo::broadcast_to(c.b, high, out.shape);
  Value span = hlo::convert(c.b, hlo::sub(c.b, hi, lo), DType::U64);
  Value offset = hlo::rem(c.b, r, span);
  Value v = hlo::add(c.b, hlo::convert(c.b, offset, DType::I64), lo);
  return hlo::convert(c.b, v, out.dtype);
}

std::vector<Value> lower_random_from_(Ctx& c) {
  Value low = hlo::convert(c.b, hlo::constant_int(c.b, DType::I64, c.int_arg("from")), DType::I64);
  int64_t high =
      c.has("to") ? c.int_arg("to") : (int64_t{1} << std::min(63, ir::itemsize(c.out().dtype) * 8 - 1));
  return {random_range(c, low, hlo::constant_int(c.b, DType::I64, high))};
}

std::vector<Value> lower_random_to_(Ctx& c) {
  return {random_range(c, hlo::constant_int(c.b, DType::I64, 0),
                       hlo::constant_int(c.b, DType::I64, c.int_arg("to")))};
}

std::vector<Value> lower_random_(Ctx& c) {
  DType t = c.out().dtype;
  int64_t high = ir::is_floating(t)
                     ? (t == DType::F64   ? (int64_t{1} << 53)
                        : t == DType::F32 ? (1 << 24)
                                          : (1 << 11))
                     : (t == DType::Bool
                            ? 2
                            : int64_t{1} << std::min(63, ir::itemsize(t) * 8 - (ir::is_unsigned(t) ? 0 : 1)));
  if (t == DType::U8) high = 256;
  return {random_range(c, hlo::constant_int(c.b, DType::I64, 0), hlo::constant_int(c.b, DType::I64, high))};
}

// native_dropout(input, p, train?) -> (output, mask)
std::vector<Value> lower_native_dropout(Ctx& c) {
  const ir::Type& out = c.out(0);
  DType st = sample_type(out.dtype);
  bool train = !c.has("train") || c.bool_arg("train");
  Value x = c.tensor("input");
  if (!train) return {x, hlo::full(c.b, ir::Type{DType::Bool, out.shape}, 1)};
  Value p = operand(c, "p", st, out.shape);
  Value u = uniform01(c.b, c.rng_state, out.shape, st);
  Value keep = hlo::compare(c.b, u, hlo::sub(c.b, hlo::full(c.b, p.type, 1.0), p), "LT");
  // Scale 1/(1-p), as CPU (p == 1 gives zeros).
  Value one_minus = hlo::sub(c.b, hlo::full(c.b, p.type, 1.0), p);
  Value scale =
      hlo::select(c.b, hlo::compare(c.b, one_minus, hlo::full(c.b, p.type, 0.0), "EQ"),
                  hlo::full(c.b, p.type, 0.0), hlo::div(c.b, hlo::full(c.b, p.type, 1.0), one_minus));
  Value xs = hlo::mul(c.b, hlo::convert(c.b, x, st), scale);
  Value y = hlo::select(c.b, keep, xs, hlo::full(c.b, xs.type, 0.0));
  return {hlo::convert(c.b, y, out.dtype), keep};
}

// native_dropout_backward(grad_output, mask, scale)
std::vector<Value> lower_native_dropout_backward(Ctx& c) {
  const ir::Type& out = c.out();
  DType st = out.dtype == DType::F64 ? DType::F64 : DType::F32;
  Value g = hlo::convert(c.b, c.tensor("grad_output"), st);
  Value m = hlo::convert(c.b, c.tensor("mask"), st);
  Value v = hlo::mul(c.b, hlo::mul(c.b, g, m), operand(c, "scale", st, out.shape));
  return {hlo::convert(c.b, v, out.dtype)};
}

}  // namespace

TPU_LOWERING("aten::normal_", lower_normal_, reads({"mean", "std"}));
TPU_LOWERING("aten::normal.Tensor_Tensor", lower_normal_tensors, reads({"mean", "std"}));
TPU_LOWERING("aten::normal.Tensor_float", lower_normal_tensors, reads({"mean", "std"}));
TPU_LOWERING("aten::normal.float_Tensor", lower_normal_tensors, reads({"mean", "std"}));
TPU_LOWERING("aten::cauchy_", lower_cauchy_, reads({"median", "sigma"}));
TPU_LOWERING("aten::log_normal_", lower_log_normal_, reads({"mean", "std"}));
TPU_LOWERING("aten::geometric_", lower_geometric_, reads({"p"}));
TPU_LOWERING("aten::uniform_", lower_uniform_, reads({"from", "to"}));
TPU_LOWERING("aten::exponential_", lower_exponential_, reads({"lambd"}));
TPU_LOWERING("aten::bernoulli_.float", lower_bernoulli_, reads({"p"}));
TPU_LOWERING("aten::bernoulli_.Tensor", lower_bernoulli_, reads({"p"}));
TPU_LOWERING("aten::random_.from", lower_random_from_, reads({"from", "to"}));
TPU_LOWERING("aten::random_.to", lower_random_to_, reads({"to"}));
TPU_LOWERING("aten::random_", lower_random_, reads({}));
TPU_LOWERING("aten::native_dropout", lower_native_dropout, reads({"input", "p", "train"}), /*random=*/true);
TPU_LOWERING("aten::native_dropout_backward", lower_native_dropout_backward,
             reads({"grad_output", "mask", "scale"}));

// Elementwise samplers: padded programs draw the unpadded program's numbers (random_bits.h).
TPU_PADDED("aten::normal_", pointwise());
TPU_PADDED("aten::normal.Tensor_Tensor", pointwise());
TPU_PADDED("aten::normal.Tensor_float", pointwise());
TPU_PADDED("aten::normal.float_Tensor", pointwise());
TPU_PADDED("aten::cauchy_", pointwise());
TPU_PADDED("aten::log_normal_", pointwise());
TPU_PADDED("aten::geometric_", pointwise());
TPU_PADDED("aten::uniform_", pointwise());
TPU_PADDED("aten::exponential_", pointwise());
TPU_PADDED("aten::bernoulli_.float", pointwise());
TPU_PADDED("aten::bernoulli_.Tensor", pointwise());
TPU_PADDED("aten::random_.from", pointwise());
TPU_PADDED("aten::random_.to", pointwise());
TPU_PADDED("aten::random_", pointwise());
TPU_PADDED("aten::native_dropout", pointwise());
TPU_PADDED("aten::native_dropout_backward", pointwise());

}  // namespace tpu::lowering
