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

// Records `call` (whose plan is op.plan) into the pending graph, which takes `call` and `key`
// over (no copy per op). Written storages now hold pending values; returns one pending value per
// new output, for fresh storages.
std::vector<std::shared_ptr<PendingValue>> record(CompiledOpPtr op, OpCall&& call, std::string&& key);
// Runs everything recorded (no-op when nothing is). Raises CheckFailure in debug fashion for
// failed runtime checks of the graph's ops.
void flush();
bool graph_empty();
size_t graph_size();
// The storage's concrete buffer (null when never written), running the pending graph first
// when its value is still pending.
runtime::BufferPtr concrete_buffer(Storage* s);

// torch.compile (torch_tpu.dynamo) records each FX graph once through the kernels and then
// replays the captured program: later calls skip the Python and dispatcher work of recording.
// A capture is replayable when the graph ran as one program whose buffer parameters are all
// input storages, with no random ops, and whose live values are all held by the given output
// or input storages. Recording during a capture does not cut at a repeated op.
struct CapturedGraph {
  CompiledOpPtr program;
  int device = 0;
  std::vector<int> param_inputs;                   // per buffer parameter: its input storage
  std::vector<runtime::BufferPtr> runtime_inputs;  // the nodes' scalars, fixed by the trace
  std::vector<std::pair<int, int>> aliases;        // (parameter, live value) donation pairs
  std::vector<int> live_input;                     // per live value: input storage it updates or -1
  std::vector<ir::DType> live_dtype;
  std::vector<int> output_live;   // per output storage: its live value or -1
  std::vector<int> output_input;  // per output storage: the input it is or -1
};

// Flushes, then records into a fresh graph whose inputs are `inputs` (concrete storages).
void begin_capture(const std::vector<Storage*>& inputs);
// Runs what was recorded since begin_capture; returns the capture, or null with the reason in
// `why` when it cannot be replayed.
std::shared_ptr<CapturedGraph> end_capture(const std::vector<Storage*>& outputs, std::string& why);
// The reason end_capture gives for a graph whose program ran padded. Such a graph can never be
// captured again (its sizes stay dynamic), so torch_tpu.dynamo records its later calls inline,
// into the surrounding fused graph, with set_repeat_cuts(false).
extern const char* const kRanPaddedReason;
// Runs `g` on `inputs` (same layout as at capture, checked by the caller): updated inputs get
// their new buffers; returns the buffer of every live value (null for input updates).
std::vector<runtime::BufferPtr> replay(const CapturedGraph& g, const std::vector<Storage*>& inputs);

// A graph is cut after this many nodes, or earlier when the op sequence repeats (a training
// step): then every step reuses one executable.
void set_max_graph_nodes(size_t n);
size_t max_graph_nodes();
// Whether a repeated op cuts the graph; returns the previous setting. Off while a torch.compile
// graph is recorded inline, where a model's layers repeat their ops; the first op recorded after
// turning it off may still cut (that is the loop's next step starting).
bool set_repeat_cuts(bool on);

}  // namespace tpu::exec
