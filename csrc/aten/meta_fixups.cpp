#include "aten/meta_fixups.h"

#include <ATen/core/Tensor.h>

namespace tpu::aten {

namespace {

bool is_reduced_float(c10::ScalarType t) { return t == c10::kBFloat16 || t == c10::kHalf; }

// CPU's layer_norm (is_mixed_type in aten/src/ATen/native/layer_norm.h): a bf16/f16 input with
// float weight or bias is "mixed" and keeps float mean/rstd; otherwise (no parameters, or
// parameters in the input's dtype) mean/rstd are in the input's dtype. The meta kernel always
// makes them float for a reduced input.
void fix_native_layer_norm(const std::vector<c10::IValue>& args, std::vector<c10::IValue>& out) {
  if (args.size() < 4 || out.size() != 3 || !args[0].isTensor()) return;
  c10::ScalarType in = args[0].toTensor().scalar_type();
  if (!is_reduced_float(in)) return;
  for (int i : {2, 3}) {
    if (args[i].isTensor() && args[i].toTensor().defined() && args[i].toTensor().scalar_type() == c10::kFloat)
      return;  // mixed type: float statistics, as the meta kernel says
  }
  for (int k : {1, 2}) {
    if (out[k].isTensor() && out[k].toTensor().defined()) out[k] = out[k].toTensor().to(in);
  }
}

}  // namespace

void fix_meta_results(const c10::OperatorHandle& op, const std::vector<c10::IValue>& args,
                      std::vector<c10::IValue>& out) {
  const c10::OperatorName& name = op.schema().operator_name();
  if (name.name == "aten::native_layer_norm" && name.overload_name.empty()) fix_native_layer_norm(args, out);
}

}  // namespace tpu::aten
