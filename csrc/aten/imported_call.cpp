#include "aten/imported_call.h"

#include "aten/tpu_tensor.h"

namespace tpu::aten {

std::vector<at::Tensor> run_imported(const std::string& module_text, const std::vector<at::Tensor>& inputs,
                                     const std::vector<ir::Type>& result_types,
                                     const std::vector<at::Tensor>& written) {
  TORCH_CHECK(!inputs.empty(), "torch_tpu: an imported module needs at least one tpu tensor input");
  const c10::Device device = inputs[0].device();
  for (size_t i = 0; i < inputs.size(); ++i) {
    const at::Tensor& t = inputs[i];
    TORCH_CHECK(t.defined() && t.is_privateuseone(), "torch_tpu: argument ", i,
                " of an imported module must be a tpu tensor, got ", t.defined() ? t.device().str() : "None");
    TORCH_CHECK(t.device() == device,
                "Expected all tensors to be on the same device, but found at least two devices, ", device,
                " and ", t.device(), "!");
  }
  for (const at::Tensor& t : written)
    TORCH_CHECK(t.is_privateuseone() && t.device() == device,
                "torch_tpu: a donated tensor must be one of the inputs");
  exec::OpCall call = internal_call("torch_tpu::imported_call", device.index());
  exec::ArgSpec list;
  list.kind = lowering::Arg::Kind::TensorList;
  for (const at::Tensor& t : inputs) list.list_views.push_back(add_view(call, t));
  call.args.push_back(list);
  exec::ArgSpec module;
  module.kind = lowering::Arg::Kind::String;
  module.s = module_text;
  call.args.push_back(module);
  return run_internal_call(call, written, result_types);
}

}  // namespace tpu::aten
