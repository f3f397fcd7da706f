// channel_shuffle(x, groups): channels (dim 1) viewed as [groups, C / groups] and transposed,
// so channel g * (C / groups) + k moves to k * groups + g.
#include "lowering/core/hlo.h"
#include "lowering/core/registry.h"

namespace tpu::lowering {

namespace {

using ir::Shape;
using ir::Value;

// channel_shuffle(self, groups)
std::vector<Value> lower_channel_shuffle(Ctx& c) {
  const Value& x = c.tensor("self");
  const int64_t groups = c.int_arg("groups");
  Shape s = x.shape();
  if (s.size() < 2 || groups <= 0 || s[1] % groups != 0) return {hlo::reshape(c.b, x, c.out().shape)};
  Shape split = {s[0], groups, s[1] / groups};
  split.insert(split.end(), s.begin() + 2, s.end());
  std::vector<int64_t> perm = {0, 2, 1};
  for (size_t i = 3; i < split.size(); ++i) perm.push_back(static_cast<int64_t>(i));
  Value t = hlo::transpose(c.b, hlo::reshape(c.b, x, split), perm);
  return {hlo::reshape(c.b, t, c.out().shape)};
}

}  // namespace

TPU_LOWERING("aten::channel_shuffle", lower_channel_shuffle, reads({"self", "groups"}));

}  // namespace tpu::lowering
