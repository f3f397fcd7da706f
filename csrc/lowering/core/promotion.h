// PyTorch's type promotion (torch.result_type), reimplemented without torch.
#pragma once
#include <vector>

#include "ir/dtype.h"
#include "lowering/core/registry.h"

namespace tpu::lowering {

ir::DType promote_types(ir::DType a, ir::DType b);
// torch.result_type over the given arguments (tensors by rank class, 0-d tensors, wrapped
// numbers and Scalars), ignoring None arguments.
ir::DType result_type(const std::vector<const Arg*>& args);
ir::DType result_type(const Ctx& ctx, const std::vector<std::string_view>& names);
// The floating type an integral input is promoted to by ops like sqrt (the default dtype).
ir::DType to_floating(ir::DType t);

}  // namespace tpu::lowering
