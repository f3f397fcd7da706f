// Counter-based random numbers from the generator's (seed, offset) runtime state.
#pragma once
#include "ir/builder.h"

namespace tpu::lowering {

// Uniform values in [0, 1) of `shape`, in f32 (or f64 when `dtype` is F64).
ir::Value uniform01(ir::Builder& b, const ir::Value& state, const ir::Shape& shape, ir::DType dtype);
// Raw random unsigned 64-bit integers of `shape`.
ir::Value random_u64(ir::Builder& b, const ir::Value& state, const ir::Shape& shape);
// Standard normal values of `shape` (Box-Muller), in f32 or f64.
ir::Value standard_normal(ir::Builder& b, const ir::Value& state, const ir::Shape& shape, ir::DType dtype);

}  // namespace tpu::lowering
