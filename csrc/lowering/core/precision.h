// Rounding a value through a narrower float dtype while keeping its own dtype, to reproduce
// where PyTorch's CPU kernels store intermediates in bf16/f16. stablehlo.reduce_precision is
// used rather than a convert pair because XLA may drop f32->bf16->f32 convert pairs as excess
// precision; reduce_precision is kept and rounds to nearest even like a convert.
#pragma once
#include "ir/builder.h"

namespace tpu::lowering::precision {

// Whether `t` is a reduced-precision float dtype (bf16, f16).
inline bool is_reduced(ir::DType t) { return t == ir::DType::BF16 || t == ir::DType::F16; }

// v rounded to the precision of `narrow` (bf16 or f16); v itself when `narrow` is not reduced.
inline ir::Value round_to(ir::Builder& b, const ir::Value& v, ir::DType narrow) {
  if (!is_reduced(narrow) || v.dtype() == narrow) return v;
  const char* attrs = narrow == ir::DType::BF16 ? "exponent_bits = 8 : i32, mantissa_bits = 7 : i32"
                                                : "exponent_bits = 5 : i32, mantissa_bits = 10 : i32";
  return b.op1("stablehlo.reduce_precision", {v}, v.type, attrs);
}

}  // namespace tpu::lowering::precision
