// Special functions StableHLO has no op for (chlo.erf & co are not available to us), written
// with plain StableHLO arithmetic. Inputs must be f32 or f64 (callers compute f16/bf16 in f32).
//
// Coefficients are our own Chebyshev fits, derived (and the formulas simulated) by
// tools/fit_special_math.py. Maximum relative error measured through the XLA:CPU plugin
// against mpmath / float64 references on dense grids:
//   erf    f32 1.4 ulp, f64 1.0 ulp
//   erfc   f32 2.7 ulp, f64 2.3 ulp (down to the smallest normal result, x ~ 9.2 / 26.5)
//   erfinv f32 3.2 ulp, f64 2.0 ulp (f64: a 5e-8 initial guess refined by two Newton steps)
// i.e. far inside PyTorch's default tolerances (f32 rtol 1.3e-6 ~ 11 ulp, f64 rtol 1e-7).
#pragma once
#include <vector>

#include "ir/builder.h"

namespace tpu::lowering::special {

// Clenshaw summation of sum_k c_k T_k(u) (c_0 first), for u in [-1, 1].
ir::Value chebyshev_series(ir::Builder& b, const ir::Value& u, const std::vector<double>& c);

ir::Value erf(ir::Builder& b, const ir::Value& x);
ir::Value erfc(ir::Builder& b, const ir::Value& x);
ir::Value erfinv(ir::Builder& b, const ir::Value& x);
// erfc(x) e^(x^2), overflowing to inf only below x ~ -9.4 (f32) / -26.6 (f64).
ir::Value erfcx(ir::Builder& b, const ir::Value& x);
// The standard normal quantile sqrt(2) erfinv(2p - 1), with erfinv's tail variable computed
// from p itself (1 - |2p - 1| = 2 min(p, 1 - p) is exact), so small p keep full accuracy.
ir::Value ndtri(ir::Builder& b, const ir::Value& p);

}  // namespace tpu::lowering::special
