// The one boxed kernel behind every lowered ATen op: unpack the stack into an exec::OpCall,
// compute output types with PyTorch's meta kernels on a compile-cache miss (so shape and dtype
// errors are PyTorch's own, raised at the call), compile, launch, box the results.
#pragma once
#include <ATen/core/dispatch/Dispatcher.h>

#include "lowering/core/registry.h"

namespace tpu::aten {

enum class Variant { Functional, InPlace, Out, Mutating };

// Registers `op` (e.g. aten::add_.Tensor) as served by `lowering` in the given variant.
void bind_op(const c10::OperatorHandle& op, const lowering::Lowering* lowering, Variant variant,
             const c10::OperatorHandle* functional);
void lowered_op_kernel(const c10::OperatorHandle& op, c10::DispatchKeySet ks, torch::jit::Stack* stack);

}  // namespace tpu::aten
