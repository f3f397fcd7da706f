// The lowering kit: steps that lowerings of every family share, written once.
//   compute_dtype   the dtype CPU computes a dtype's math in (f16/bf16 in f32, rounded once)
//   finish          a computed value as output k: its meta dtype and shape
//   output_wanted,  the `output_mask` of backward ops (native_layer_norm_backward, ...): which
//   masked_outputs  outputs to compute, and zeros as the placeholders of the others
//   conj, abs       complex-aware conjugate and magnitude (identity / real result for real types)
//   require_real    the error of an op that has no complex lowering yet
#pragma once
#include <string_view>
#include <vector>

#include "lowering/core/registry.h"

namespace tpu::lowering {

ir::DType compute_dtype(ir::DType t);

// `v` converted to output k's dtype and reshaped to its shape.
ir::Value finish(Ctx& c, const ir::Value& v, int k = 0);

// Whether output k is requested by the op's declared `output_mask` (no mask, or a mask shorter
// than k: requested).
bool output_wanted(const Ctx& c, int k);
// One result per output: values[k] finished where it was computed (valid), zeros of the output's
// meta type where it was not (an output left out by output_mask is an empty placeholder).
std::vector<ir::Value> masked_outputs(Ctx& c, const std::vector<ir::Value>& values);

// Complex conjugate; a real value is returned unchanged.
ir::Value conj(ir::Builder& b, const ir::Value& x);
// |x|: a complex value's magnitude (a real dtype), bool and unsigned values unchanged.
ir::Value abs(ir::Builder& b, const ir::Value& x);
// Throws (a clear error instead of a StableHLO verifier failure) when `t` is complex.
void require_real(ir::DType t, std::string_view op = "this op");

}  // namespace tpu::lowering
