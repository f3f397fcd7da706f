// gcd and lcm of integers, as CPU computes them: Euclid's algorithm on the absolute values
// (gcd(0, 0) = 0), and lcm = |a / gcd * b| (0 when the gcd is 0).
#include <stdexcept>

#include "lowering/core/elementwise_ops.h"
#include "lowering/core/linalg_util.h"

namespace tpu::lowering {
namespace {

using namespace ew;  // NOLINT
using Vs = std::vector<Value>;

void require_integer(const Ctx& ctx, const char* op) {
  if (!ir::is_integral(ctx.out(0).dtype))
    throw std::invalid_argument(std::string("\"") + op + "_tpu\" not implemented for '" +
                                ir::torch_name(ctx.out(0).dtype) + "'");
}

Value magnitude(Builder& b, const Value& x) { return ir::is_unsigned(x.dtype()) ? x : abs(b, x); }

// Euclid's algorithm element by element. Each step at least shrinks the pair like consecutive
// Fibonacci numbers, so 1.5 steps per bit reach (0, gcd) for every input of the dtype; pairs
// that finish early stay fixed (a == 0).
Value gcd(Builder& b, const Value& x, const Value& y) {
  const int64_t steps = 12 * ir::itemsize(x.dtype()) + 2;
  Vs ab = linalg::fori_loop(b, steps, {magnitude(b, x), magnitude(b, y)},
                            [](Builder& rb, const Value&, const Vs& s) -> Vs {
                              Value done = eq(rb, s[0], 0);
                              Value divisor = hlo::select(rb, done, cst(rb, s[0], 1), s[0]);
                              Value rem = hlo::rem(rb, s[1], divisor);
                              return {hlo::select(rb, done, s[0], rem), hlo::select(rb, done, s[1], s[0])};
                            });
  return ab[1];
}

Value lcm(Builder& b, const Value& x, const Value& y) {
  Value g = gcd(b, x, y);
  Value zero = eq(b, g, 0);
  Value q = hlo::div(b, x, hlo::select(b, zero, cst(b, g, 1), g));
  return hlo::select(b, zero, cst(b, g, 0), magnitude(b, hlo::mul(b, q, y)));
}

template <Value (*F)(Builder&, const Value&, const Value&)>
Vs lower_integer_binary(Ctx& ctx, const char* op) {
  require_integer(ctx, op);
  return compute_exact(ctx, {"self", "other"}, [](Builder& b, const Vs& x) { return F(b, x[0], x[1]); });
}

Vs lower_gcd(Ctx& ctx) { return lower_integer_binary<gcd>(ctx, "gcd"); }
Vs lower_lcm(Ctx& ctx) { return lower_integer_binary<lcm>(ctx, "lcm"); }

}  // namespace

TPU_LOWERING("aten::gcd", lower_gcd, reads({"self", "other"}));
TPU_LOWERING("aten::lcm", lower_lcm, reads({"self", "other"}));

}  // namespace tpu::lowering
