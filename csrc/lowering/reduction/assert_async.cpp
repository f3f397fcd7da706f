// aten::_assert_async(self[, assert_msg]): the device-side assertion torch.compile graphs keep
// for checks on values (one_hot's class range, runtime asserts of data-dependent shapes). A
// runtime check of the op, reported like CUDA's device asserts: after the op in debug mode, at
// the next synchronisation otherwise.
#include <stdexcept>

#include "lowering/core/hlo.h"
#include "lowering/core/registry.h"

namespace tpu::lowering {

namespace {

std::vector<ir::Value> require_nonzero(Ctx& c, const std::string& message) {
  const ir::Value& self = c.tensor("self");
  // is_nonzero's errors: shapes are known when the op is lowered.
  if (self.type.numel() == 0) throw std::runtime_error("Boolean value of Tensor with no values is ambiguous");
  if (self.type.numel() > 1)
    throw std::runtime_error("Boolean value of Tensor with more than one value is ambiguous");
  ir::Value value = hlo::reshape(c.b, self, {});
  c.require(hlo::compare(c.b, value, hlo::full(c.b, value.type, 0), "NE"), message);
  return {};
}

std::vector<ir::Value> lower_assert_async(Ctx& c) {
  return require_nonzero(c, "Expected Tensor with single nonzero value, but got zero");
}

std::vector<ir::Value> lower_assert_async_msg(Ctx& c) {
  const std::string& message = c.arg("assert_msg").s;
  return require_nonzero(c, message.empty() ? "Assertion is failed" : message);
}

}  // namespace

TPU_LOWERING("aten::_assert_async", lower_assert_async, reads({"self"}));
TPU_LOWERING("aten::_assert_async.msg", lower_assert_async_msg, reads({"self", "assert_msg"}));

}  // namespace tpu::lowering
