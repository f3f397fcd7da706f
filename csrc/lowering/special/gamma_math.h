// The gamma function family in plain StableHLO arithmetic (no chlo.lgamma & co): log-gamma,
// digamma, trigamma, the Hurwitz zeta function and polygamma. Inputs must be f32 or f64
// (callers compute f16/bf16 and integers in f32).
//
// Semantics follow PyTorch's CPU kernels, including their values at poles and infinities
// (lgamma: +inf at non-positive integers; digamma: -inf at +0, +inf at -0, NaN at negative
// integers; zeta(s, q): inf for s == 1 or integer q <= 0, NaN for s < 1). Coefficients are
// derived in tools/fit_gamma_math.py.
#pragma once
#include "ir/builder.h"

namespace tpu::lowering::special {

ir::Value lgamma(ir::Builder& b, const ir::Value& x);
ir::Value digamma(ir::Builder& b, const ir::Value& x);
// polygamma(1, x), evaluated the way PyTorch's CPU kernel does (reflection through
// sin(pi * x) with pi * x rounded in the working type, which decides values near poles).
ir::Value trigamma(ir::Builder& b, const ir::Value& x);
// Hurwitz zeta sum_k (q + k)^-s by Euler-Maclaurin summation after shifting q to >= 0 with
// up to 64 direct terms; zeta_unsupported marks q < -64, beyond that shift.
ir::Value zeta(ir::Builder& b, const ir::Value& s, const ir::Value& q);
ir::Value zeta_unsupported(ir::Builder& b, const ir::Value& q);
// Regularized incomplete gamma functions P(a, x) (upper = false) and Q(a, x) = 1 - P: the
// power series below x = a + 1 and the continued fraction above, each unrolled to a fixed
// number of terms (80: compile time grows with them), which converge for a up to ~150 (beyond,
// near x ~ a, they are truncated;
// the caller reports those arguments).
ir::Value incomplete_gamma(ir::Builder& b, const ir::Value& a, const ir::Value& x, bool upper);
// Arguments where incomplete_gamma's fixed expansions do not converge.
ir::Value incomplete_gamma_unsupported(ir::Builder& b, const ir::Value& a, const ir::Value& x);
// d^n/dx^n digamma(x) for n >= 0.
ir::Value polygamma(ir::Builder& b, int64_t n, const ir::Value& x);

}  // namespace tpu::lowering::special
