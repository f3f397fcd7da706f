// Rounding a value through a narrower float dtype while keeping its own dtype, to reproduce
// where PyTorch's CPU kernels store intermediates in bf16/f16. stablehlo.reduce_precision is
// used rather than a convert pair because XLA may drop f32->bf16->f32 convert pairs as excess
// precision; reduce_precision is kept and rounds to nearest even like a convert.
#pragma once
#include "ir/builder.h"
#include "lowering/core/hlo_elementwise.h"

namespace tpu::lowering::precision {

// Whether `t` is a reduced-precision float dtype (bf16, f16).
inline bool is_reduced(ir::DType t) { return t == ir::DType::BF16 || t == ir::DType::F16; }

// v rounded to the precision of `narrow` (bf16 or f16); v itself when `narrow` is not reduced.
inline ir::Value round_to(ir::Builder& b, const ir::Value& v, ir::DType narrow) {
  if (!is_reduced(narrow) || v.dtype() == narrow) return v;
  return narrow == ir::DType::BF16 ? hlo::reduce_precision(b, v, 8, 7) : hlo::reduce_precision(b, v, 5, 10);
}

}  // namespace tpu::lowering::precision
