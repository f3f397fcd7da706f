// Builds the StableHLO module of one op call: read views from storages, apply the lowering,
// write results through views or lay them out as fresh storages.
#pragma once
#include <map>
#include <string>
#include <vector>

#include "exec/op_call.h"

namespace tpu::exec {

struct ProgramLayout {
  std::vector<int> input_storages;          // storages passed as leading parameters, in order
  std::vector<int> written_storages;        // storage replaced by each leading output, in order
  std::vector<ir::DType> written_dtypes;    // element type each written storage then holds
  std::vector<std::string> check_messages;  // trailing i1 outputs: runtime checks (Ctx::require)
};

// Storages the op must receive: read through a view, or only partly overwritten.
std::vector<bool> storages_read(const OpCall& call);

// (parameter, output) pairs of a program laid out as `layout`: an input storage that the op
// overwrites with a value of the same type. The program lets the output reuse the parameter's
// buffer, so a launch that donates it saves an allocation and a copy (in-place updates).
std::vector<std::pair<int, int>> donatable_inputs(const OpCall& call, const ProgramLayout& layout);

struct EmittedOp {
  std::vector<int> written_storages;   // unique, in order of first write (new values in `current`)
  std::vector<ir::Value> new_outputs;  // flat storages of fresh results, plan order
  std::vector<std::pair<ir::Value, std::string>> checks;
};

// Emits the op's body into `b`. `current` maps each storage index the op reads to its value and
// is updated with the values the op writes.
EmittedOp emit_op(ir::Builder& b, const OpCall& call, const OutputPlan& plan,
                  std::map<int, ir::Value>& current, const std::vector<ir::Value>& scalars,
                  const ir::Value& rng_state);

// Returns the module text; fills `layout`. Throws std::runtime_error naming the op when the
// lowering produced values that disagree with `plan`.
std::string build_program(const OpCall& call, const OutputPlan& plan, ProgramLayout& layout);

}  // namespace tpu::exec
