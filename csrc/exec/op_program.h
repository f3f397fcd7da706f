// Builds the StableHLO module of one op call: read views from storages, apply the lowering,
// write results through views or lay them out as fresh storages.
#pragma once
#include <map>
#include <string>
#include <vector>

#include "exec/op_call.h"
#include "lowering/indexing/padded_view.h"

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
// overwrites with a value of the same type and layout. The program lets the output reuse the
// parameter's buffer, so a launch that donates it saves an allocation and a copy (in-place
// updates).
// `spec`: the symbols of a bucketed program (null at exact shapes).
std::vector<std::pair<int, int>> donatable_inputs(const OpCall& call, const DynamicSpec* spec,
                                                  const ProgramLayout& layout);

struct EmittedOp {
  std::vector<int> written_storages;                // unique, in order of first write (in `current`)
  std::vector<lowering::StorageValue> new_outputs;  // storages of fresh results, plan order
  std::vector<std::pair<ir::Value, std::string>> checks;
};

// The storage value a program parameter holds: a flat storage as is; a padded one with its
// dynamic dimensions' symbols when the call is bucketed, else cut to its (static) real elements,
// flat.
lowering::StorageValue storage_parameter(ir::Builder& b, const ir::Value& param, const OpCall& call,
                                         int storage, const std::vector<ir::Value>& symbols);
// The i64 0-d value of each symbol of a bucketed call, sliced from its parameter.
std::vector<ir::Value> symbol_values(ir::Builder& b, const ir::Value& param);

// Emits the op's body into `b`. `current` maps each storage index the op reads to its value and
// is updated with the values the op writes; `symbols` are the values of call.dynamic's symbols.
// Throws lowering::NotPaddable when a bucketed call cannot run padded.
EmittedOp emit_op(ir::Builder& b, const OpCall& call, const OutputPlan& plan,
                  std::map<int, lowering::StorageValue>& current, const std::vector<ir::Value>& scalars,
                  const ir::Value& rng_state, const std::vector<ir::Value>& symbols);

// Returns the module text; fills `layout`. Throws std::runtime_error naming the op when the
// lowering produced values that disagree with `plan`.
std::string build_program(const OpCall& call, const OutputPlan& plan, ProgramLayout& layout);

}  // namespace tpu::exec
