#include "lowering/core/dynamic.h"

#include <algorithm>
#include <map>
#include <optional>

#include "lowering/core/float8.h"
#include "lowering/core/hlo.h"
#include "lowering/core/reduce_util.h"
#include "lowering/core/registry.h"
#include "lowering/creation/random_bits.h"

namespace tpu::lowering {

using ir::DType;
using ir::Type;
using ir::Value;

bool any_dynamic(const Dims& dims) {
  return std::any_of(dims.begin(), dims.end(), [](const Value& v) { return v.valid(); });
}

Value dim_size(ir::Builder& b, const Value& v, const Dims& dims, int d) {
  if (d < static_cast<int>(dims.size()) && dims[d].valid()) return dims[d];
  return hlo::constant_int(b, DType::I64, v.dim(d));
}

Value valid_mask(ir::Builder& b, const ir::Shape& shape, const Dims& dims) {
  const Type index{DType::I64, shape};
  Value mask;
  for (size_t d = 0; d < dims.size() && d < shape.size(); ++d) {
    if (!dims[d].valid()) continue;
    Value inside = hlo::compare(b, hlo::iota(b, index, static_cast<int64_t>(d)),
                                hlo::broadcast_in_dim(b, dims[d], shape, {}), "LT");
    mask = mask.valid() ? hlo::and_(b, mask, inside) : inside;
  }
  return mask.valid() ? mask : hlo::full(b, Type{DType::Bool, shape}, 1);
}

Value fill_padding(ir::Builder& b, const Value& v, const Dims& dims, const Value& fill) {
  if (!any_dynamic(dims)) return v;
  return hlo::select(b, valid_mask(b, v.shape(), dims), v, hlo::broadcast_in_dim(b, fill, v.shape(), {}));
}

Value element_count(ir::Builder& b, const Value& v, const Dims& dims, const std::vector<int64_t>& reduced,
                    DType dtype) {
  int64_t known = 1;
  Value runtime;
  for (int64_t d : reduced) {
    if (d < static_cast<int64_t>(dims.size()) && dims[d].valid()) {
      runtime = runtime.valid() ? hlo::mul(b, runtime, dims[d]) : dims[d];
    } else {
      known *= v.dim(static_cast<int>(d));
    }
  }
  Value count = hlo::constant(b, dtype, static_cast<double>(known));
  if (runtime.valid()) count = hlo::mul(b, count, hlo::convert(b, runtime, dtype));
  return count;
}

Value neutral_value(ir::Builder& b, DType dtype, Neutral n) {
  switch (n) {
    case Neutral::Zero:
      return hlo::constant(b, dtype, 0);
    case Neutral::One:
      return hlo::constant(b, dtype, 1);
    case Neutral::Lowest:
      return reduce::lowest(b, dtype);
    case Neutral::Highest:
      return reduce::highest(b, dtype);
  }
  return hlo::constant(b, dtype, 0);
}

PadRule pointwise(std::vector<std::string> fixed) {
  return PadRule{PadRule::Kind::Pointwise, {}, std::move(fixed), false, nullptr};
}
PadRule masked(std::vector<std::pair<std::string, Neutral>> fills, bool widen) {
  return PadRule{PadRule::Kind::Masked, std::move(fills), {}, widen, nullptr};
}
PadRule custom(std::vector<Value> (*padded)(Ctx&)) {
  return PadRule{PadRule::Kind::Custom, {}, {}, false, padded};
}
PadRule static_arguments(std::vector<std::string> names) {
  return PadRule{PadRule::Kind::Custom, {}, std::move(names), false, nullptr};
}
PadRule exact_only() { return PadRule{}; }

namespace {

std::map<std::string, PadRule>& rules() {
  static std::map<std::string, PadRule> r;
  return r;
}

bool in_folder(const std::string& file, const char* folder) { return file.find(folder) != std::string::npos; }

}  // namespace

PadRuleRegistrar::PadRuleRegistrar(const char* name, PadRule rule) { rules()[name] = std::move(rule); }

std::vector<std::string> padded_rule_names() {
  std::vector<std::string> names;
  for (const auto& [name, rule] : rules()) names.push_back(name);
  return names;
}

const PadRule& pad_rule(const Lowering& lowering) {
  static const PadRule kPointwise = pointwise(), kNone = exact_only();
  auto it = rules().find(lowering.name);
  if (it != rules().end()) return it->second;
  for (const char* folder : {"lowering/elementwise/", "lowering/special/", "lowering/nn/activation"})
    if (in_folder(lowering.file, folder)) return kPointwise;
  return kNone;
}

std::vector<Value> lower_padded(const Lowering& lowering, Ctx& c) {
  const PadRule& rule = pad_rule(lowering);
  if (rule.kind == PadRule::Kind::None) throw NotPaddable(lowering.name + " has no padded lowering");
  for (const std::string& name : rule.fixed)
    if (c.has(name) && any_dynamic(c.dims(name)))
      throw NotPaddable(lowering.name + " needs '" + name + "' at a fixed size");
  auto widened = [&](const Value& v) {
    const bool half = v.dtype() == DType::BF16 || v.dtype() == DType::F16;
    return rule.widen && half ? hlo::convert(c.b, v, DType::F32) : v;
  };
  for (const auto& [name, fill] : rule.fills) {
    if (!c.has(name)) continue;
    Arg& a = c.args[c.index(name)];
    if (a.kind == Arg::Kind::Tensor && a.value.valid())
      a.value = widened(fill_padding(c.b, a.value, a.dims, neutral_value(c.b, a.value.dtype(), fill)));
    for (size_t i = 0; i < a.values.size() && i < a.list_dims.size(); ++i)
      if (a.values[i].valid())
        a.values[i] =
            fill_padding(c.b, a.values[i], a.list_dims[i], neutral_value(c.b, a.values[i].dtype(), fill));
  }
  if (rule.kind == PadRule::Kind::Pointwise && c.out_types.size() == 1) {
    // An operand whose static size equals another's dynamic one (in every call this program
    // serves, or they would not broadcast) is padded to the same bound; fixed arguments (a
    // sorted sequence, a set of test elements) do not broadcast with the result.
    const ir::Shape& out = c.out_types[0].shape;
    std::vector<int> fixed;
    for (const std::string& name : rule.fixed)
      if (c.has(name)) fixed.push_back(c.index(name));
    for (size_t i = 0; i < c.args.size(); ++i) {
      Arg& a = c.args[i];
      if (a.kind != Arg::Kind::Tensor || !a.value.valid() || a.value.rank() > static_cast<int>(out.size()) ||
          std::find(fixed.begin(), fixed.end(), static_cast<int>(i)) != fixed.end())
        continue;
      const size_t shift = out.size() - a.value.rank();
      for (int d = 0; d < a.value.rank(); ++d) {
        const int64_t want = out[shift + d], have = a.value.dim(d);
        const bool is_static = d >= static_cast<int>(a.dims.size()) || !a.dims[d].valid();
        if (!is_static || have == 1 || have >= want) continue;
        std::vector<int64_t> low(a.value.rank(), 0), high(a.value.rank(), 0);
        high[d] = want - have;
        a.value = hlo::pad(c.b, a.value, hlo::constant(c.b, a.value.dtype(), 0), low, high);
      }
    }
  }
  const size_t checks = c.checks.size();
  // Random draws give the real elements the numbers of the unpadded program.
  std::optional<PaddedDraws> draws;
  if (c.rng_state.valid() && !c.out_types.empty()) draws.emplace(c.out_types[0].shape, c.out_dims_of(0));
  std::vector<Value> results = rule.padded ? rule.padded(c) : float8::lower(lowering, c);
  // A check of a pointwise op would also judge the padding.
  if (rule.kind == PadRule::Kind::Pointwise && c.checks.size() > checks)
    throw NotPaddable(lowering.name + " checks its input values");
  return results;
}

}  // namespace tpu::lowering
