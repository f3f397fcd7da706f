#include "lowering/creation/random_rejection.h"

#include "lowering/core/elementwise_ops.h"
#include "lowering/core/reduce_util.h"
#include "lowering/creation/random_bits.h"

namespace tpu::lowering {

using ir::Builder;
using ir::DType;
using ir::Value;

Value sample_until_accepted(Builder& b, const Value& rng_state, const Value& done, const Value& result,
                            const std::vector<Value>& params, const std::vector<Value>& carry,
                            const RejectionStepFn& step) {
  constexpr int64_t kMaxRounds = int64_t{1} << 20;
  // Loop state: (round, rng, done, result, params..., carry...).
  std::vector<Value> init{hlo::constant_int(b, DType::I64, 0), private_state(b, rng_state), done, result};
  init.insert(init.end(), params.begin(), params.end());
  init.insert(init.end(), carry.begin(), carry.end());
  const size_t np = params.size();
  auto cond = [](Builder& rb, const std::vector<Value>& s) -> std::vector<Value> {
    Value pending = reduce::max(rb, ew::not_(rb, s[2]), reduce::dims_or_all({}, s[2].rank()));
    Value more = hlo::compare(rb, s[0], hlo::constant_int(rb, DType::I64, kMaxRounds), "LT");
    return {ew::and_(rb, pending, more)};
  };
  auto body = [&](Builder& rb, const std::vector<Value>& s) -> std::vector<Value> {
    Value rng = s[1];
    std::vector<Value> ps(s.begin() + 4, s.begin() + 4 + np);
    std::vector<Value> cs(s.begin() + 4 + np, s.end());
    RejectionStep r = step(rb, rng, ps, cs);
    Value take = ew::and_(rb, r.accept, ew::not_(rb, s[2]));
    std::vector<Value> next{ew::add_c(rb, s[0], 1), rng, ew::or_(rb, s[2], take),
                            hlo::select(rb, take, r.value, s[3])};
    next.insert(next.end(), ps.begin(), ps.end());
    next.insert(next.end(), r.carry.begin(), r.carry.end());
    return next;
  };
  return hlo::while_loop(b, init, cond, body)[3];
}

}  // namespace tpu::lowering
