// Builds the StableHLO module of one op call: read views from storages, apply the lowering,
// write results through views or lay them out as fresh storages.
#pragma once
#include <string>
#include <vector>

#include "exec/op_call.h"

namespace tpu::exec {

struct ProgramLayout {
  std::vector<int> input_storages;    // storages passed as leading parameters, in order
  std::vector<int> written_storages;  // storage replaced by each leading output, in order
  std::vector<ir::DType> written_dtypes;  // element type each written storage then holds
};

// Returns the module text; fills `layout`. Throws std::runtime_error naming the op when the
// lowering produced values that disagree with `plan`.
std::string build_program(const OpCall& call, const OutputPlan& plan, ProgramLayout& layout);

}  // namespace tpu::exec
