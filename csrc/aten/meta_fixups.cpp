#include "aten/meta_fixups.h"

#include <ATen/core/Tensor.h>
#include <ATen/ops/empty.h>

namespace tpu::aten {

namespace {

bool is_reduced_float(c10::ScalarType t) { return t == c10::kBFloat16 || t == c10::kHalf; }

// CPU's layer_norm and batch_norm kernels (is_mixed_type in aten/src/ATen/native/layer_norm.h
// and batch_norm.h): a bf16/f16 input with a float parameter is "mixed" and keeps float
// statistics; otherwise (no parameters, or parameters in the input's dtype) the saved
// statistics (returns `stats`) are in the input's dtype. The meta kernels always make them float
// for a reduced input.
void stats_in_input_dtype(const std::vector<c10::IValue>& args, std::vector<c10::IValue>& out,
                          std::initializer_list<size_t> params, std::initializer_list<size_t> stats) {
  if (args.empty() || !args[0].isTensor()) return;
  c10::ScalarType in = args[0].toTensor().scalar_type();
  if (!is_reduced_float(in)) return;
  for (size_t i : params) {
    if (i < args.size() && args[i].isTensor() && args[i].toTensor().defined() &&
        args[i].toTensor().scalar_type() == c10::kFloat)
      return;  // mixed type: float statistics, as the meta kernel says
  }
  for (size_t k : stats) {
    if (k < out.size() && out[k].isTensor() && out[k].toTensor().defined()) out[k] = out[k].toTensor().to(in);
  }
}

}  // namespace

void fix_meta_results(const c10::OperatorHandle& op, const std::vector<c10::IValue>& args,
                      std::vector<c10::IValue>& out) {
  const std::string& name = op.schema().operator_name().name;
  const std::string& overload = op.schema().operator_name().overload_name;
  if (name == "aten::native_layer_norm" && overload.empty()) {
    stats_in_input_dtype(args, out, {2, 3}, {1, 2});
  } else if (name == "aten::_native_batch_norm_legit" && overload == "no_stats") {
    stats_in_input_dtype(args, out, {1, 2}, {1, 2});
  } else if (name == "aten::_native_batch_norm_legit" && overload.empty()) {
    stats_in_input_dtype(args, out, {1, 2, 3, 4}, {1, 2});
    // In eval mode (training=false) CPU's kernel returns empty save_mean / save_invstd.
    if (args.size() > 5 && args[5].isBool() && !args[5].toBool()) {
      for (size_t k : {1, 2})
        if (out.size() > k && out[k].isTensor()) out[k] = at::empty({0}, out[k].toTensor().options());
    }
  } else if (
             name == "aten::_native_batch_norm_legit_no_training" || name == "aten::_batch_norm_with_update") {
    if (overload.empty()) stats_in_input_dtype(args, out, {1, 2, 3, 4}, {1, 2});
  }
}

}  // namespace tpu::aten
