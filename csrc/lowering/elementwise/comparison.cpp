// Comparisons: aten::eq/ne/lt/le/gt/ge (.Tensor and .Scalar). Both operands are converted to
// their promoted dtype (torch.result_type) and compared there, as CPU does; the result is bool.
#include "lowering/core/elementwise_ops.h"

namespace tpu::lowering {
namespace {

template <const char* Dir>
std::vector<ir::Value> lower_compare(Ctx& ctx) {
  ir::DType t = result_type(ctx, {"self", "other"});
  if (Dir[0] != 'E' && Dir[0] != 'N') require_real(t);  // complex numbers only compare ==, !=
  const ir::Shape& shape = ctx.out(0).shape;
  ir::Value r = hlo::compare(ctx.b, operand(ctx, "self", t, shape), operand(ctx, "other", t, shape), Dir);
  return {finish(ctx, r)};
}

constexpr char kEq[] = "EQ", kNe[] = "NE", kLt[] = "LT", kLe[] = "LE", kGt[] = "GT", kGe[] = "GE";

}  // namespace

TPU_LOWERING("aten::eq.Tensor", lower_compare<kEq>, reads({"self", "other"}));
TPU_LOWERING("aten::eq.Scalar", lower_compare<kEq>, reads({"self", "other"}));
TPU_LOWERING("aten::ne.Tensor", lower_compare<kNe>, reads({"self", "other"}));
TPU_LOWERING("aten::ne.Scalar", lower_compare<kNe>, reads({"self", "other"}));
TPU_LOWERING("aten::lt.Tensor", lower_compare<kLt>, reads({"self", "other"}));
TPU_LOWERING("aten::lt.Scalar", lower_compare<kLt>, reads({"self", "other"}));
TPU_LOWERING("aten::le.Tensor", lower_compare<kLe>, reads({"self", "other"}));
TPU_LOWERING("aten::le.Scalar", lower_compare<kLe>, reads({"self", "other"}));
TPU_LOWERING("aten::gt.Tensor", lower_compare<kGt>, reads({"self", "other"}));
TPU_LOWERING("aten::gt.Scalar", lower_compare<kGt>, reads({"self", "other"}));
TPU_LOWERING("aten::ge.Tensor", lower_compare<kGe>, reads({"self", "other"}));
TPU_LOWERING("aten::ge.Scalar", lower_compare<kGe>, reads({"self", "other"}));

}  // namespace tpu::lowering
