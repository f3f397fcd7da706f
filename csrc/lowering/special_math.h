// Special functions StableHLO has no op for (chlo.erf & co are not available to us), written
// with plain StableHLO arithmetic. Inputs must be f32 or f64 (callers compute f16/bf16 in f32).
//
// Accuracy, measured against mpmath (tools/fit_special_math.py, which also derives every
// coefficient below by Chebyshev interpolation):
//   erf    f32 <= 1.5 ulp, f64 <= 1 ulp (relative)
//   erfc   f32 <= 3 ulp,   f64 <= 4 ulp (relative, down to the smallest normal result)
//   erfinv f32 <= 3 ulp,   f64 <= 2 ulp (f64: initial guess ~5e-8 + two Newton steps)
// (simulated in numpy with the same operation order; the plugin's exp/log add their own ulp).
#pragma once
#include "ir/builder.h"

namespace tpu::lowering::special {

ir::Value erf(ir::Builder& b, const ir::Value& x);
ir::Value erfc(ir::Builder& b, const ir::Value& x);
ir::Value erfinv(ir::Builder& b, const ir::Value& x);

}  // namespace tpu::lowering::special
