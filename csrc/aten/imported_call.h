// Running a StableHLO module from another framework on tpu tensors (torch_tpu.pallas.jax_op).
#pragma once
#include <ATen/core/Tensor.h>

#include <string>
#include <vector>

#include "ir/builder.h"

namespace tpu::aten {

// The module's @main applied to `inputs` (tpu tensors on one device, in @main's parameter
// order), for results of `result_types`: the first ones are written into `written` (donated
// inputs, updated in place), the others are returned as new tensors. One op
// like any other: in strict mode its own executable, cached by the module text and the inputs'
// layout; in fused mode part of the recorded program.
std::vector<at::Tensor> run_imported(const std::string& module_text, const std::vector<at::Tensor>& inputs,
                                     const std::vector<ir::Type>& result_types,
                                     const std::vector<at::Tensor>& written = {});

}  // namespace tpu::aten
