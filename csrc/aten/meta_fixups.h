// Output dtypes where PyTorch's meta kernel and its CPU kernel disagree. A tpu tensor must look
// like the CPU result, so for these ops the CPU kernel's dtype replaces the meta one before the
// outputs are planned (the lowering then converts its result to that dtype).
#pragma once
#include <ATen/core/dispatch/Dispatcher.h>
#include <ATen/core/ivalue.h>

#include <vector>

namespace tpu::aten {

// Rewrites `out` (the meta call's returns for `op` run on `args`) in place.
void fix_meta_results(const c10::OperatorHandle& op, const std::vector<c10::IValue>& args,
                      std::vector<c10::IValue>& out);

}  // namespace tpu::aten
