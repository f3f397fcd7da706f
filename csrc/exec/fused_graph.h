// Fused eager mode: ops are recorded as nodes of one pending graph instead of running at once;
// at a materialization point the whole graph becomes one StableHLO program, so XLA can fuse
// elementwise chains and drop intermediates. Only values some live storage still holds are
// program outputs. Every node is emitted by the same emit_op as strict mode: no op is lowered
// twice.
#pragma once
#include <memory>
#include <vector>

#include "exec/compile_cache.h"
#include "exec/op_call.h"

namespace tpu::exec {

// Records `call` (whose plan is op.plan) into the pending graph. Written storages now hold
// pending values; returns one pending value per new output, for fresh storages.
std::vector<std::shared_ptr<PendingValue>> record(CompiledOpPtr op, const OpCall& call,
                                                  const std::string& key);
// Runs everything recorded (no-op when nothing is). Raises CheckFailure in debug fashion for
// failed runtime checks of the graph's ops.
void flush();
bool graph_empty();
size_t graph_size();
// The storage's concrete buffer (null when never written), running the pending graph first
// when its value is still pending.
runtime::BufferPtr concrete_buffer(Storage* s);

// Where user code created a node ("model.py:42"), for errors raised long after the call; the
// Python layer installs the function (exec stays free of Python).
void set_source_location_hook(std::string (*hook)());

// A graph is cut after this many nodes, or earlier when the op sequence repeats (a training
// step): then every step reuses one executable.
void set_max_graph_nodes(size_t n);
size_t max_graph_nodes();

}  // namespace tpu::exec
