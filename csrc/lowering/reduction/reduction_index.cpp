// Reductions that return indices: max.dim / min.dim (values and indices) and argmax / argmin.
// A variadic stablehlo.reduce carries (value, index) pairs; its body keeps the first index on
// ties and lets NaN win, which is what the CPU kernels return.
#include "lowering/core/hlo.h"
#include "lowering/core/reduce_util.h"
#include "lowering/core/registry.h"

namespace tpu::lowering {

namespace {

using ir::Value;

std::vector<Value> value_index(Ctx& c, bool is_max) {
  Value x = c.tensor("self");
  int64_t dim = hlo::wrap_dim(c.int_arg("dim"), x.rank());
  auto [v, i] = reduce::arg_reduce(c.b, x, dim, is_max);
  return {hlo::reshape(c.b, v, c.out(0).shape), hlo::reshape(c.b, i, c.out(1).shape)};
}
std::vector<Value> lower_max_dim(Ctx& c) { return value_index(c, true); }
std::vector<Value> lower_min_dim(Ctx& c) { return value_index(c, false); }

// argmax(self, dim?, keepdim): without a dim, the index into the flattened tensor.
Value arg_only(Ctx& c, bool is_max) {
  Value x = c.tensor("self");
  int64_t dim = 0;
  if (c.has("dim")) {
    dim = hlo::wrap_dim(c.int_arg("dim"), x.rank());
  } else {
    x = hlo::reshape(c.b, x, {x.type.numel()});
  }
  Value i = reduce::arg_reduce(c.b, x, dim, is_max).second;
  return hlo::reshape(c.b, i, c.out().shape);
}
std::vector<Value> lower_argmax(Ctx& c) { return {arg_only(c, true)}; }
std::vector<Value> lower_argmin(Ctx& c) { return {arg_only(c, false)}; }

// On padded values: the padding holds the lowest (argmax) or highest (argmin) value, so it never
// wins over a real element; a flattened index into the padded array is turned into its
// coordinates, then into the index over the real sizes.
std::vector<Value> padded_arg(Ctx& c, bool is_max) {
  const Dims& dims = c.dims("self");
  Value& x = c.args[c.index("self")].value;
  x = fill_padding(c.b, x, dims, neutral_value(c.b, x.dtype(), is_max ? Neutral::Lowest : Neutral::Highest));
  Value i = arg_only(c, is_max);
  if (c.has("dim")) return {i};
  Value rest = hlo::reshape(c.b, i, {});
  Value real = hlo::constant_int(c.b, ir::DType::I64, 0), stride = hlo::constant_int(c.b, ir::DType::I64, 1);
  for (int d = x.rank(); d-- > 0;) {
    Value bound = hlo::constant_int(c.b, ir::DType::I64, x.dim(d));
    real = hlo::add(c.b, real, hlo::mul(c.b, hlo::rem(c.b, rest, bound), stride));
    rest = hlo::div(c.b, rest, bound);
    stride = hlo::mul(c.b, stride, dim_size(c.b, x, dims, d));
  }
  return {hlo::reshape(c.b, real, c.out().shape)};
}
std::vector<Value> lower_argmax_padded(Ctx& c) { return padded_arg(c, true); }
std::vector<Value> lower_argmin_padded(Ctx& c) { return padded_arg(c, false); }

}  // namespace

TPU_LOWERING("aten::max.dim", lower_max_dim, reads({"self", "dim"}));
TPU_LOWERING("aten::min.dim", lower_min_dim, reads({"self", "dim"}));
TPU_LOWERING("aten::argmax", lower_argmax, reads({"self", "dim"}));
TPU_LOWERING("aten::argmin", lower_argmin, reads({"self", "dim"}));

TPU_PADDED("aten::max.dim", masked({{"self", Neutral::Lowest}}));
TPU_PADDED("aten::min.dim", masked({{"self", Neutral::Highest}}));
TPU_PADDED("aten::argmax", custom(lower_argmax_padded));
TPU_PADDED("aten::argmin", custom(lower_argmin_padded));

}  // namespace tpu::lowering
