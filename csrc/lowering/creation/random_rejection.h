// Vectorized rejection sampling: every element repeats its own proposal until accepted, all
// elements stepping together in one stablehlo.while that runs while any element is pending.
// The loop draws from an op-private stream (random_bits.h private_state), so its unbounded
// number of draws never overlaps another call's.
#pragma once
#include <functional>
#include <vector>

#include "ir/builder.h"

namespace tpu::lowering {

struct RejectionStep {
  ir::Value accept;              // i1, the elements whose proposal is accepted now
  ir::Value value;               // the proposals (kept where accepted)
  std::vector<ir::Value> carry;  // the step's own per-element values for the next iteration
};
// One proposal for every element: draws with next_* from `rng` (advancing it), reads the
// loop-invariant `params` and the `carry` of the previous step. Regions capture nothing, so
// every value the step needs comes through params or carry.
using RejectionStepFn =
    std::function<RejectionStep(ir::Builder& b, ir::Value& rng, const std::vector<ir::Value>& params,
                                const std::vector<ir::Value>& carry)>;

// The accepted values. Elements already `done` keep `result` (special cases decided before the
// loop); so do elements still pending after a safety cap of 2^20 rounds, far beyond what any
// sampler here needs (they accept a constant fraction of proposals each round).
ir::Value sample_until_accepted(ir::Builder& b, const ir::Value& rng_state, const ir::Value& done,
                                const ir::Value& result, const std::vector<ir::Value>& params,
                                const std::vector<ir::Value>& carry, const RejectionStepFn& step);

}  // namespace tpu::lowering
