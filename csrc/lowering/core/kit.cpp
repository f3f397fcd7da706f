#include "lowering/core/kit.h"

#include <stdexcept>
#include <string>

#include "lowering/core/hlo.h"

namespace tpu::lowering {

ir::DType compute_dtype(ir::DType t) {
  return t == ir::DType::F16 || t == ir::DType::BF16 ? ir::DType::F32 : t;
}

ir::Value finish(Ctx& c, const ir::Value& v, int k) {
  return hlo::reshape(c.b, hlo::convert(c.b, v, c.out(k).dtype), c.out(k).shape);
}

bool output_wanted(const Ctx& c, int k) {
  if (!c.has("output_mask") || c.arg("output_mask").kind != Arg::Kind::IntList) return true;
  const std::vector<int64_t>& mask = c.ints("output_mask");
  return k >= static_cast<int>(mask.size()) || mask[k] != 0;
}

std::vector<ir::Value> masked_outputs(Ctx& c, const std::vector<ir::Value>& values) {
  std::vector<ir::Value> out;
  for (size_t k = 0; k < c.out_types.size(); ++k) {
    const int i = static_cast<int>(k);
    out.push_back(k < values.size() && values[k].valid() ? finish(c, values[k], i)
                                                         : hlo::full(c.b, c.out(i), 0));
  }
  return out;
}

ir::Value conj(ir::Builder& b, const ir::Value& x) {
  if (!ir::is_complex(x.dtype())) return x;
  return hlo::complex(b, hlo::real(b, x), hlo::neg(b, hlo::imag(b, x)));
}

ir::Value abs(ir::Builder& b, const ir::Value& x) {
  if (ir::is_unsigned(x.dtype())) return x;  // bool and unsigned integers
  return hlo::abs(b, x);                     // a complex value's magnitude is real
}

void require_real(ir::DType t, std::string_view op) {
  if (ir::is_complex(t))
    throw std::invalid_argument("torch_tpu: " + std::string(op) +
                                " does not support complex tensors on tpu yet");
}

}  // namespace tpu::lowering
