// var / std / var_mean / std_mean with a correction, and vector norms (linalg_vector_norm,
// norm.*). Both accumulate in float for bf16/f16 inputs, like the CPU kernels.
#include <cmath>

#include "lowering/core/hlo.h"
#include "lowering/core/reduce_util.h"
#include "lowering/core/registry.h"

namespace tpu::lowering {

namespace {

using ir::Builder;
using ir::DType;
using ir::Value;

// |x|^2 elementwise in the real type (complex inputs: re^2 + im^2).
Value abs2(Builder& b, const Value& x) {
  if (!ir::is_complex(x.dtype())) return hlo::mul(b, x, x);
  Value re = hlo::real(b, x);
  Value im = hlo::imag(b, x);
  return hlo::add(b, hlo::mul(b, re, re), hlo::mul(b, im, im));
}

struct Moments {
  Value var, mean;  // reduced shapes, accumulation dtypes
};

// Two-pass variance: mean first, then the mean of squared deviations divided by
// max(N - correction, 0) (so N <= correction gives inf or NaN, as on CPU). On padded values N
// counts the real elements and the padding's deviations are zeros.
Moments moments(Ctx& c) {
  Builder& b = c.b;
  const Dims& padded = c.dims("self");
  Value x = c.tensor("self");
  x = hlo::convert(b, fill_padding(b, x, padded, hlo::constant(b, x.dtype(), 0)), compute_dtype(x.dtype()));
  std::vector<int64_t> dims = reduce::dims_arg(c, "dim", x.rank());
  DType real = ir::real_type(x.dtype());
  Value n = element_count(b, x, padded, dims, real);
  Value sum = reduce::sum(b, x, dims);
  Value mean = hlo::div(b, sum, hlo::broadcast_in_dim(b, hlo::convert(b, n, sum.dtype()), sum.shape(), {}));
  Value dev = hlo::sub(b, x, reduce::expand_back(b, mean, x.shape(), dims));
  dev = fill_padding(b, dev, padded, hlo::constant(b, dev.dtype(), 0));
  Value m2 = reduce::sum(b, abs2(b, dev), dims);
  Value corr =
      c.has("correction") ? hlo::convert(b, c.tensor("correction"), real) : hlo::constant(b, real, 1);
  Value dof = hlo::max(b, hlo::sub(b, n, corr), hlo::constant(b, real, 0));
  Value var = hlo::div(b, m2, hlo::broadcast_in_dim(b, dof, m2.shape(), {}));
  return {var, mean};
}

// var.correction(self, dim?, *, correction?, keepdim) and friends.
std::vector<Value> lower_var(Ctx& c) { return {finish(c, moments(c).var, 0)}; }
std::vector<Value> lower_std(Ctx& c) { return {finish(c, hlo::sqrt(c.b, moments(c).var), 0)}; }
std::vector<Value> lower_var_mean(Ctx& c) {
  Moments m = moments(c);
  return {finish(c, m.var, 0), finish(c, m.mean, 1)};
}
std::vector<Value> lower_std_mean(Ctx& c) {
  Moments m = moments(c);
  return {finish(c, hlo::sqrt(c.b, m.var), 0), finish(c, m.mean, 1)};
}

// The static `ord`/`p` argument: an int scalar arrives in Arg::i, a float one in Arg::d.
double static_p(const Ctx& c, std::string_view name, double dflt) {
  if (!c.has(name)) return dflt;
  const Arg& a = c.arg(name);
  return a.d != 0 ? a.d : static_cast<double>(a.i);
}

// The p-norm over dims of x, already in its accumulation dtype (the result is real).
Value p_norm(Builder& b, const Value& x, double p, const std::vector<int64_t>& dims) {
  Value a = abs(b, x);
  if (p == 0) {
    Value nz = hlo::compare(b, a, hlo::scalar_like(b, a, 0), "NE");
    return reduce::sum(b, hlo::convert(b, nz, a.dtype()), dims);
  }
  if (std::isinf(p)) return p > 0 ? reduce::max(b, a, dims) : reduce::min(b, a, dims);
  if (p == 1) return reduce::sum(b, a, dims);
  if (p == 2) return hlo::sqrt(b, reduce::sum(b, abs2(b, x), dims));
  Value s = reduce::sum(b, hlo::power(b, a, hlo::scalar_like(b, a, p)), dims);
  return hlo::power(b, s, hlo::scalar_like(b, s, 1.0 / p));
}

// The p-norm of x over dims, computed in the accumulation type of the result dtype.
Value vector_norm(Ctx& c, double p, const std::vector<int64_t>& dims) {
  Builder& b = c.b;
  DType out = c.out().dtype;
  Value x = c.tensor("self");
  // Padding that cannot change the norm: zeros, or +inf for the minimum of magnitudes.
  x = fill_padding(b, x, c.dims("self"), hlo::constant(b, x.dtype(), std::isinf(p) && p < 0 ? INFINITY : 0));
  // The input is cast to the result dtype (`dtype=`, or the input's own) and accumulated in
  // float for bf16/f16; complex inputs stay complex of the matching width.
  DType acc = compute_dtype(out);
  if (ir::is_complex(x.dtype())) {
    x = hlo::convert(b, x, acc == DType::F64 ? DType::C128 : DType::C64);
  } else {
    x = hlo::convert(b, hlo::convert(b, x, out), acc);
  }
  return hlo::reshape(b, hlo::convert(b, p_norm(b, x, p, dims), out), c.out().shape);
}

// linalg_vector_norm(self, ord, dim?, keepdim, *, dtype)
std::vector<Value> lower_linalg_vector_norm(Ctx& c) {
  return {vector_norm(c, static_p(c, "ord", 2), reduce::dims_arg(c, "dim", c.tensor("self").rank()))};
}
// norm.ScalarOpt_dim(self, p?, dim[], keepdim) and norm.ScalarOpt_dim_dtype(..., *, dtype)
std::vector<Value> lower_norm_dim(Ctx& c) {
  return {vector_norm(c, static_p(c, "p", 2), reduce::dims_arg(c, "dim", c.tensor("self").rank()))};
}
// norm.Scalar(self, p) and norm.ScalarOpt_dtype(self, p?, *, dtype): every dimension.
std::vector<Value> lower_norm_all(Ctx& c) {
  return {vector_norm(c, static_p(c, "p", 2), reduce::dims_or_all({}, c.tensor("self").rank()))};
}

// renorm(self, p, dim, maxnorm): every slice along `dim` whose p-norm (over the other dims, in
// float for bf16/f16) exceeds maxnorm is scaled by maxnorm / (norm + 1e-7), as CPU's kernel does;
// the factor is rounded to the input dtype before the product.
std::vector<Value> lower_renorm(Ctx& c) {
  Builder& b = c.b;
  Value x = c.tensor("self");
  const DType t = x.dtype(), acc = compute_dtype(t);
  const int64_t dim = hlo::wrap_dim(c.int_arg("dim"), x.rank());
  std::vector<int64_t> dims;
  for (int64_t d = 0; d < x.rank(); ++d)
    if (d != dim) dims.push_back(d);
  Value norm = p_norm(b, hlo::convert(b, x, acc), static_p(c, "p", 2), dims);
  Value maxnorm = hlo::broadcast_to(b, hlo::convert(b, c.tensor("maxnorm"), acc), norm.shape());
  Value scale = hlo::div(b, maxnorm, hlo::add(b, norm, hlo::scalar_like(b, norm, 1e-7)));
  Value factor = hlo::select(b, hlo::compare(b, norm, maxnorm, "GT"), scale, hlo::scalar_like(b, norm, 1));
  factor = hlo::broadcast_in_dim(b, hlo::convert(b, factor, t), x.shape(), {dim});
  return {hlo::mul(b, x, factor)};
}

constexpr uint32_t kStaticP = 1u << 1;

}  // namespace

TPU_LOWERING("aten::var.correction", lower_var, reads({"self", "dim", "correction"}));
TPU_LOWERING("aten::std.correction", lower_std, reads({"self", "dim", "correction"}));
TPU_LOWERING("aten::var_mean.correction", lower_var_mean, reads({"self", "dim", "correction"}));
TPU_LOWERING("aten::std_mean.correction", lower_std_mean, reads({"self", "dim", "correction"}));
TPU_LOWERING("aten::linalg_vector_norm", lower_linalg_vector_norm, reads({"self", "dim"}, {"ord"}));
TPU_LOWERING("aten::norm.ScalarOpt_dim", lower_norm_dim, reads({"self", "dim"}, {"p"}));
TPU_LOWERING("aten::norm.ScalarOpt_dim_dtype", lower_norm_dim, reads({"self", "dim"}, {"p"}));
TPU_LOWERING("aten::norm.Scalar", lower_norm_all, reads({"self"}, {"p"}));
TPU_LOWERING("aten::norm.ScalarOpt_dtype", lower_norm_all, reads({"self"}, {"p"}));
TPU_LOWERING("aten::renorm", lower_renorm, reads({"self", "dim", "maxnorm"}, {"p"}));

// Padded execution: the lowerings above count real elements and fill the padding themselves.
TPU_PADDED("aten::var.correction", custom());
TPU_PADDED("aten::std.correction", custom());
TPU_PADDED("aten::var_mean.correction", custom());
TPU_PADDED("aten::std_mean.correction", custom());
TPU_PADDED("aten::linalg_vector_norm", custom());
TPU_PADDED("aten::norm.ScalarOpt_dim", custom());
TPU_PADDED("aten::norm.ScalarOpt_dim_dtype", custom());
TPU_PADDED("aten::norm.Scalar", custom());
TPU_PADDED("aten::norm.ScalarOpt_dtype", custom());

}  // namespace tpu::lowering
