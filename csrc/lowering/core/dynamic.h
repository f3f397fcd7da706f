// Bounded dynamic dimensions (docs/dynamic_shapes.md). A program compiled for a bucket holds each
// varying dimension at its bound and receives the real size at run time; elements past the real
// size are padding whose values are unspecified. A lowering sees, beside each tensor argument's
// value, its Dims: per dimension the real size as an i64 0-d value, or an invalid Value where the
// dimension is static (its size is the value's shape).
//
// Which lowerings may run on padded values, and how, is each op's PadRule: pointwise ops need
// nothing; reductions, matrix products and softmax first fill the padding with a value that
// does not change their result (0 for a sum, -inf for a max); others read the Dims themselves.
// An op without a rule always runs at exact shapes.
#pragma once
#include <cstdint>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "ir/builder.h"

namespace tpu::lowering {

struct Lowering;
struct Ctx;

using Dims = std::vector<ir::Value>;

bool any_dynamic(const Dims& dims);
// The real size of dimension `d` of `v` as an i64 0-d value (a constant when static).
ir::Value dim_size(ir::Builder& b, const ir::Value& v, const Dims& dims, int d);
// True (i1, of `shape`) where every dynamic coordinate lies below its real size.
ir::Value valid_mask(ir::Builder& b, const ir::Shape& shape, const Dims& dims);
// `v` with its padding replaced by the 0-d `fill` of v's dtype.
ir::Value fill_padding(ir::Builder& b, const ir::Value& v, const Dims& dims, const ir::Value& fill);
// The number of elements of `dims` of `v` (real sizes), a 0-d value of `dtype`.
ir::Value element_count(ir::Builder& b, const ir::Value& v, const Dims& dims,
                        const std::vector<int64_t>& reduced, ir::DType dtype);

// A value that leaves a reduction unchanged when it fills the padding.
enum class Neutral : uint8_t {
  Zero,     // sums, matrix products, counts, norms
  One,      // products
  Lowest,   // max, argmax, logsumexp, softmax: -inf (floating), the minimum (integers), false
  Highest,  // min, argmin: +inf, the maximum, true
};
ir::Value neutral_value(ir::Builder& b, ir::DType dtype, Neutral n);

struct PadRule {
  enum class Kind : uint8_t {
    None,       // runs at exact shapes only
    Pointwise,  // each result element reads only the input elements at its own (broadcast) position
    Masked,     // correct once the padding of the listed arguments holds their neutral value
    Custom,     // the lowering reads the Dims itself (cat, mean, sort, ...)
  };
  Kind kind = Kind::None;
  std::vector<std::pair<std::string, Neutral>> fills;  // Masked: argument name, fill
  std::vector<std::string> fixed;                      // arguments that must have no dynamic dimension
  // Masked: 16-bit float arguments are widened to float32 once filled (the same products and sums:
  // XLA:CPU cannot run a bf16 x bf16 -> f32 dot of such operands).
  bool widen = false;
  // Custom: the lowering of padded values, when it is not the op's lowering itself.
  std::vector<ir::Value> (*padded)(Ctx&) = nullptr;
};
PadRule pointwise(std::vector<std::string> fixed = {});
PadRule masked(std::vector<std::pair<std::string, Neutral>> fills, bool widen = false);
PadRule custom(std::vector<ir::Value> (*padded)(Ctx&) = nullptr);
// The op's own lowering, while the listed arguments are static (a scatter into a padded tensor
// at real positions, from values that are not padded).
PadRule static_arguments(std::vector<std::string> names);
PadRule exact_only();

// The rule of `lowering`: its TPU_PADDED line, else pointwise for the ops of lowering/elementwise,
// lowering/special and the activations, else none.
const PadRule& pad_rule(const Lowering& lowering);
// Every TPU_PADDED line, by op name (tests check each names a lowering).
std::vector<std::string> padded_rule_names();

// Runs `lowering` on `c`, some of whose arguments or results have dynamic dimensions, by its
// rule (fills the padding it names, then lowers); throws NotPaddable when it cannot.
std::vector<ir::Value> lower_padded(const Lowering& lowering, Ctx& c);

struct PadRuleRegistrar {
  PadRuleRegistrar(const char* name, PadRule rule);
};
// TPU_PADDED("aten::sum.dim_IntList", masked({{"self", Neutral::Zero}}));
#define TPU_PADDED(name, rule) \
  static ::tpu::lowering::PadRuleRegistrar TPU_PADDED_CONCAT(tpu_pad_rule_, __COUNTER__)(name, rule)
#define TPU_PADDED_CONCAT_INNER(a, b) a##b
#define TPU_PADDED_CONCAT(a, b) TPU_PADDED_CONCAT_INNER(a, b)

// Thrown while lowering a call on padded values that cannot run padded (no rule, a runtime
// check on padding, shapes the rule does not cover): the call then runs at exact shapes.
struct NotPaddable : std::runtime_error {
  using std::runtime_error::runtime_error;
};

}  // namespace tpu::lowering
