// _softmax / _log_softmax and their backward ops. bf16/f16 are computed in float and rounded
// once (the CPU kernels do the same); half_to_float makes the result float (out_types says so).
// One exception, to match CPU bit for bit: CPU's last-dim log_softmax kernel keeps its per-row
// sum of exponentials and its log in the input's dtype (bf16/f16 scratch arrays), so both are
// rounded there before the final float subtraction; along other dims it works in float.
#include "lowering/core/hlo.h"
#include "lowering/core/precision.h"
#include "lowering/core/reduce_util.h"
#include "lowering/core/registry.h"

namespace tpu::lowering {

namespace {

using ir::Builder;
using ir::DType;
using ir::Value;

// Argument i in the accumulation dtype, as rank >= 1; and the normalised dim (argument dim_arg).
Value in_acc(Ctx& c, std::string_view name) {
  Value x = c.tensor(name);
  x = hlo::convert(c.b, x, compute_dtype(x.dtype()));
  return x.rank() == 0 ? hlo::reshape(c.b, x, {1}) : x;
}
int64_t dim_of(Ctx& c, std::string_view dim_arg, int rank) { return hlo::wrap_dim(c.int_arg(dim_arg), rank); }

// x - max(x) along dim, with its reduction dims, for numerically safe exponentials.
Value shifted(Builder& b, const Value& x, int64_t dim) {
  Value m = reduce::max(b, x, {dim});
  return hlo::sub(b, x, reduce::expand_back(b, m, x.shape(), {dim}));
}

// _softmax(self, dim, half_to_float)
std::vector<Value> lower_softmax(Ctx& c) {
  Builder& b = c.b;
  Value x = in_acc(c, "self");
  int64_t dim = dim_of(c, "dim", c.tensor("self").rank());
  if (x.dim(dim) == 0) return {finish(c, x)};
  Value e = hlo::exp(b, shifted(b, x, dim));
  Value s = reduce::sum(b, e, {dim});
  return {finish(c, hlo::div(b, e, reduce::expand_back(b, s, x.shape(), {dim})))};
}

// _log_softmax(self, dim, half_to_float): (x - max) - log(sum(exp(x - max)))
std::vector<Value> lower_log_softmax(Ctx& c) {
  Builder& b = c.b;
  Value x = in_acc(c, "self");
  int64_t dim = dim_of(c, "dim", c.tensor("self").rank());
  if (x.dim(dim) == 0) return {finish(c, x)};
  Value z = shifted(b, x, dim);
  Value s = reduce::sum(b, hlo::exp(b, z), {dim});
  // CPU rounds through the input's reduced dtype (see the file comment).
  DType in = c.tensor("self").dtype();
  bool reduced = precision::is_reduced(in) && c.out().dtype == in;
  auto round = [&](const Value& v) { return precision::round_to(b, v, in); };
  bool last_dim = dim == c.tensor("self").rank() - 1 || c.tensor("self").rank() == 0;
  Value lse;
  if (reduced && last_dim) {
    lse = round(hlo::log(b, round(s)));
  } else {
    lse = hlo::log(b, s);
  }
  return {finish(c, hlo::sub(b, z, reduce::expand_back(b, lse, x.shape(), {dim})))};
}

// _softmax_backward_data(grad_output, output, dim, input_dtype):
//   grad_input = y * (g - sum(g * y, dim))
std::vector<Value> lower_softmax_backward(Ctx& c) {
  Builder& b = c.b;
  Value g = in_acc(c, "grad_output"), y = in_acc(c, "output");
  y = hlo::convert(b, y, g.dtype());
  int64_t dim = dim_of(c, "dim", c.tensor("grad_output").rank());
  Value gy = hlo::mul(b, g, y);
  Value s = reduce::expand_back(b, reduce::sum(b, gy, {dim}), g.shape(), {dim});
  return {finish(c, hlo::mul(b, y, hlo::sub(b, g, s)))};
}

// _log_softmax_backward_data(grad_output, output, dim, input_dtype):
//   grad_input = g - exp(y) * sum(g, dim)
std::vector<Value> lower_log_softmax_backward(Ctx& c) {
  Builder& b = c.b;
  Value g = in_acc(c, "grad_output"), y = in_acc(c, "output");
  y = hlo::convert(b, y, g.dtype());
  int64_t dim = dim_of(c, "dim", c.tensor("grad_output").rank());
  Value s = reduce::expand_back(b, reduce::sum(b, g, {dim}), g.shape(), {dim});
  Value e = hlo::exp(b, y);
  return {finish(c, hlo::sub(b, g, hlo::mul(b, e, s)))};
}

}  // namespace

TPU_LOWERING("aten::_softmax", lower_softmax, reads({"self", "dim"}));
TPU_LOWERING("aten::_log_softmax", lower_log_softmax, reads({"self", "dim"}));
TPU_LOWERING("aten::_softmax_backward_data", lower_softmax_backward, reads({"grad_output", "output", "dim"}));
TPU_LOWERING("aten::_log_softmax_backward_data", lower_log_softmax_backward,
             reads({"grad_output", "output", "dim"}));

// Padded execution: -inf padding contributes nothing to the normalizer; the backward's sums
// over `dim` see zeros there.
TPU_PADDED("aten::_softmax", masked({{"self", Neutral::Lowest}}));
TPU_PADDED("aten::_log_softmax", masked({{"self", Neutral::Lowest}}));
TPU_PADDED("aten::_softmax_backward_data",
           masked({{"grad_output", Neutral::Zero}, {"output", Neutral::Zero}}));
TPU_PADDED("aten::_log_softmax_backward_data", masked({{"grad_output", Neutral::Zero}}));

}  // namespace tpu::lowering
