// Lowerings the glue itself uses (copies between views and dtypes, nonzero in two steps); not
// ATen ops, except nonzero_static, which is nonzero with a static size.
#include "lowering/core/hlo.h"
#include "lowering/core/index_util.h"
#include "lowering/core/registry.h"

namespace tpu::lowering {

namespace {

// Input (already read through its view) converted and broadcast to the single result type.
std::vector<ir::Value> lower_copy(Ctx& c) {
  ir::Value v = hlo::convert(c.b, c.tensor("self"), c.out().dtype);
  return {hlo::broadcast_to(c.b, v, c.out().shape)};
}

}  // namespace

TPU_LOWERING("torch_tpu::view_copy", lower_copy, reads({"self"}));

}  // namespace tpu::lowering

namespace tpu::lowering {

namespace {

using ir::DType;
using ir::Value;

Value nonzero_mask(Ctx& c) {
  Value x = c.tensor("self");
  return hlo::compare(c.b, x, hlo::full(c.b, x.type, 0), "NE");
}

// Number of non-zero elements, as a 0-d int64 (read on the host to size nonzero's result).
std::vector<Value> lower_count_nonzero(Ctx& c) {
  Value m = hlo::convert(c.b, nonzero_mask(c), DType::I64);
  std::vector<int64_t> dims(m.rank());
  for (int i = 0; i < m.rank(); ++i) dims[i] = i;
  return {hlo::reduce(c.b, m, hlo::constant_int(c.b, DType::I64, 0), dims, hlo::Combiner::Add)};
}

// The count is the result's first dimension (read on the host first).
std::vector<Value> lower_nonzero(Ctx& c) {
  return {idx::nonzero_coords(c.b, nonzero_mask(c), c.out().shape[0], 0)};
}

// nonzero_static(self, *, size, fill_value)
std::vector<Value> lower_nonzero_static(Ctx& c) {
  return {idx::nonzero_coords(c.b, nonzero_mask(c), c.int_arg("size"), c.int_arg("fill_value"))};
}

}  // namespace

TPU_LOWERING("torch_tpu::count_nonzero", lower_count_nonzero, reads({"self"}));
TPU_LOWERING("torch_tpu::nonzero", lower_nonzero, reads({"self"}));
TPU_LOWERING("aten::nonzero_static", lower_nonzero_static, reads({"self", "size", "fill_value"}));

TPU_PADDED("torch_tpu::view_copy", pointwise());

}  // namespace tpu::lowering
