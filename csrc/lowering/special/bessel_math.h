// Bessel functions in plain StableHLO arithmetic: modified I0, I1 (and their exponentially
// scaled forms), K0, K1 (and scaled), J0, J1, Y0, Y1 of the first and second kind, and the
// Airy function Ai. Inputs must be f32 or f64 (callers compute f16/bf16 and integers in f32).
// Edge values (inf, NaN, the poles of K and Y at 0, NaN for negative arguments of K and Y)
// follow PyTorch's CPU kernels; so does overflow of I0/I1 once e^|x| overflows.
//
// Each function is a Chebyshev series of a smooth remainder on a small and a large-argument
// interval, fitted by tools/fit_bessel_math.py (the forms are listed there).
#pragma once
#include "ir/builder.h"

namespace tpu::lowering::special {

ir::Value bessel_i0e(ir::Builder& b, const ir::Value& x);
ir::Value bessel_i1e(ir::Builder& b, const ir::Value& x);
ir::Value bessel_i0(ir::Builder& b, const ir::Value& x);
ir::Value bessel_i1(ir::Builder& b, const ir::Value& x);
// K0, K1 and e^x K0, e^x K1 (scaled = true).
ir::Value bessel_k0(ir::Builder& b, const ir::Value& x, bool scaled);
ir::Value bessel_k1(ir::Builder& b, const ir::Value& x, bool scaled);
ir::Value bessel_j0(ir::Builder& b, const ir::Value& x);
ir::Value bessel_j1(ir::Builder& b, const ir::Value& x);
ir::Value bessel_y0(ir::Builder& b, const ir::Value& x);
ir::Value bessel_y1(ir::Builder& b, const ir::Value& x);
// The Airy function Ai (NaN at +-inf, as on CPU).
ir::Value airy_ai(ir::Builder& b, const ir::Value& x);

}  // namespace tpu::lowering::special
