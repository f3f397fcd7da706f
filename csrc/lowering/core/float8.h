// Conversions to and from the float8 dtypes, rounded bit for bit as PyTorch's c10 types do.
//
// XLA's own converts differ from c10 in several ways: float8_e4m3fn saturates to +-448 in c10
// (XLA: NaN), a float64 source is rounded twice in c10 (to float32 first), and the NaN bit
// patterns c10 produces (sign kept or dropped, payloads) are its own. So every conversion that
// involves a float8 type goes through float32 the way c10 does, and the float32 <-> float8 step
// is emitted on the bits. hlo::convert calls this for any pair with a float8 side.
#pragma once
#include <string>
#include <vector>

#include "ir/builder.h"
#include "lowering/core/registry.h"

namespace tpu::lowering::float8 {

// `v` converted to `dtype`; one of the two dtypes is a float8 type.
ir::Value convert(ir::Builder& b, const ir::Value& v, ir::DType dtype);

// How an op treats float8 tensors (lowering/elementwise/float8_ops.cpp): run as lowered (copies, views,
// indexing), computed in float32 on widened operands (the arithmetic CPU supports), or not at
// all (CPU raises NotImplementedError for the dtype; so does torch_tpu, when planning the op).
enum class Support { Native, Widened, None };
Support support(const std::string& lowering_name);

// Runs `lowering` on `c`, widening float8 operands and results for Support::Widened ops.
std::vector<ir::Value> lower(const Lowering& lowering, Ctx& c);

}  // namespace tpu::lowering::float8
