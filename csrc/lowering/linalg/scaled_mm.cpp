// torch._scaled_mm(a, b, scale_a, scale_b, bias, scale_result, out_dtype, use_fast_accum), as
// PyTorch's CPU kernel computes it (_scaled_mm_out_cpu_emulated in native/Blas.cpp): both
// float8 operands widened to float32 and multiplied by their scales (0-d / one element:
// tensor-wise; (M, 1) and (1, N): row-wise), a float32 matmul, + bias in float32, for float8
// e4m3fn/e5m2 outputs a multiplication by 1 / scale_result, then one rounding to out_dtype
// (c10's rounding for float8 results, lowering/core/float8.h). use_fast_accum changes nothing here:
// the accumulation is always float32. Shapes, dtypes and layouts were checked by the meta kernel.
#include "lowering/core/hlo.h"
#include "lowering/core/registry.h"

namespace tpu::lowering {
namespace {

using ir::DType;
using ir::Value;

// `m` in float32 times its scale: one value for the whole matrix, or one per row (scale_a of
// shape (M, 1)) / column (scale_b of shape (1, N)), broadcast like the CPU's at::mul.
Value scaled(Ctx& c, const Value& m, const Value& scale) {
  Value f = hlo::convert(c.b, m, DType::F32);
  Value s = hlo::convert(c.b, scale, DType::F32);
  s = scale.type.numel() == 1 && scale.rank() != 2 ? hlo::reshape(c.b, s, {}) : s;
  return hlo::mul(c.b, f, hlo::broadcast_to(c.b, s, f.shape()));
}

std::vector<Value> lower_scaled_mm(Ctx& c) {
  const ir::Type& out = c.out(0);
  Value a = scaled(c, c.tensor("self"), c.tensor("scale_a"));
  Value b = scaled(c, c.tensor("mat2"), c.tensor("scale_b"));
  Value r = hlo::dot_general(c.b, a, b, {}, {}, {1}, {0}, DType::F32);
  if (c.has("bias"))
    r = hlo::add(c.b, r, hlo::broadcast_to(c.b, hlo::convert(c.b, c.tensor("bias"), DType::F32), r.shape()));
  if (c.has("scale_result") && (out.dtype == DType::F8E4M3FN || out.dtype == DType::F8E5M2)) {
    Value s = hlo::reshape(c.b, hlo::convert(c.b, c.tensor("scale_result"), DType::F32), {});
    Value inv = hlo::div(c.b, hlo::constant(c.b, DType::F32, 1.0), s);
    r = hlo::mul(c.b, r, hlo::broadcast_in_dim(c.b, inv, r.shape(), {}));
  }
  return {hlo::convert(c.b, r, out.dtype)};
}

}  // namespace

TPU_LOWERING("aten::_scaled_mm", lower_scaled_mm,
             reads({"self", "mat2", "scale_a", "scale_b", "bias", "scale_result"}));

}  // namespace tpu::lowering
