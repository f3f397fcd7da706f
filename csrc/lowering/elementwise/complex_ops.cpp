// Complex tensors from real ones: torch.complex(real, imag) and torch.polar(abs, angle), which
// broadcast their operands to the output's shape (PyTorch's meta kernel computed it); and
// conj_physical.
#include "lowering/core/elementwise_util.h"
#include "lowering/core/hlo.h"
#include "lowering/core/registry.h"

namespace tpu::lowering {

namespace {

using ir::DType;
using ir::Value;

// complex(real, imag) = real + i imag
std::vector<Value> lower_complex(Ctx& c) {
  const DType part = ir::real_type(c.out().dtype);
  return {hlo::complex(c.b, operand_like_out(c, "real", part), operand_like_out(c, "imag", part))};
}

// polar(abs, angle) = abs cos(angle) + i abs sin(angle)
std::vector<Value> lower_polar(Ctx& c) {
  const DType part = ir::real_type(c.out().dtype);
  Value r = operand_like_out(c, "abs", part), theta = operand_like_out(c, "angle", part);
  Value re = hlo::mul(c.b, r, hlo::cos(c.b, theta));
  Value im = hlo::mul(c.b, r, hlo::sin(c.b, theta));
  return {hlo::complex(c.b, re, im)};
}

// conj_physical.out(self, out): re - i im, a copy for real dtypes. (conj() itself is a lazy
// bit that copies and the Conjugate dispatch key resolve through this op.) Only the out= form
// is lowered: the functional conj_physical is CompositeImplicit and keeps its autograd formula.
std::vector<Value> lower_conj_physical_out(Ctx& c) {
  Value x = hlo::convert(c.b, c.tensor("self"), c.out().dtype);
  if (!ir::is_complex(x.dtype())) return {x};
  Value re = hlo::real(c.b, x);
  Value im = hlo::imag(c.b, x);
  return {hlo::complex(c.b, re, hlo::neg(c.b, im))};
}

}  // namespace

TPU_LOWERING("aten::conj_physical.out", lower_conj_physical_out, reads({"self"}));
TPU_LOWERING("aten::complex", lower_complex, reads({"real", "imag"}));
TPU_LOWERING("aten::polar", lower_polar, reads({"abs", "angle"}));

}  // namespace tpu::lowering
