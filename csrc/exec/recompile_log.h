// TORCH_TPU_LOG_RECOMPILES=1: when a program is compiled for an op (or fused graph) whose
// structure was compiled before, say what changed: which input's shape, dtype or layout, or
// which compile-time parameter.
#pragma once
#include <string>
#include <vector>

#include "exec/op_call.h"

namespace tpu::exec {

bool recompile_logging();
void set_recompile_logging(bool on);
// Called on every compile; logs (to stderr) the difference from the last compile of the same
// structure, if any.
void note_compile(const std::vector<const OpCall*>& calls);
// A program compiled for buckets (call.dynamic set; `plan` at the bounds): which sizes became
// dynamic and the bucket they run in.
void note_bucketed_compile(const OpCall& call, const OutputPlan& plan);
// A fused graph compiled for buckets, with `symbols` runtime sizes, strides and offsets.
void note_bucketed_graph_compile(size_t nodes, size_t symbols);
// A call whose sizes vary but that cannot run padded (`why`): it compiles per shape.
void note_not_paddable(const std::string& op, const std::string& why);

}  // namespace tpu::exec
