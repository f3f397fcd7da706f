// Compiles (on a cache miss) and launches one op call.
#pragma once
#include <functional>
#include <stdexcept>
#include <vector>

#include "exec/compile_cache.h"
#include "exec/op_call.h"
#include "lowering/core/registry.h"

namespace tpu::exec {

// The cached entry of `call` (key = call.key()), its plan computed by `make_plan` on a miss.
// With `compile`, the entry also has its single-op executable (compiled now if needed); fused
// mode only needs the plan. Counts dispatches, hits and misses. When a miss pads an uploaded
// input (automatic_dynamic.h: pad_uploads), `key` becomes the call's new key.
CompiledOpPtr find_or_compile(const OpCall& call, std::string& key,
                              const std::function<OutputPlan()>& make_plan, bool compile = true);
// Compiles `mlir` into `op` (counted and timed); errors name `what` and include the program.
void compile_into(CompiledOp& op, const std::string& mlir, const std::string& what);
// Launches asynchronously. Written storages get their new buffers; the buffers of new outputs
// are returned in plan order. In debug mode waits for completion, so errors surface here.
std::vector<runtime::BufferPtr> launch(const CompiledOp& op, const OpCall& call);
// Waits for every launched program; rethrows the first execution error and raises a
// CheckFailure for any runtime check (index out of range, ...) that failed since.
void synchronize();
// After an out-of-memory error was raised: waits for launched work and forgets the launches
// that failed for lack of memory, so the next sync does not raise the same error again.
void forget_out_of_memory_launches();
// Raises the first failed runtime check of earlier (strict-mode) launches, if any.
void raise_failed_checks();
// The same for the launches that have completed, without waiting for the others (an event's
// synchronize raises the failed checks of the work it waited for, like a device-side assert).
void raise_failed_completed_checks();

// Device copy of a runtime scalar (cached: the same values recur).
runtime::BufferPtr scalar_buffer(const HostScalar& s, int device);
// Appends the call's runtime scalars and random state (as its program declares them, after the
// storages) to `args`; `keep` holds the buffers alive through the launch.
void append_runtime_inputs(const OpCall& call, std::vector<runtime::BufferPtr>& keep,
                           std::vector<PJRT_Buffer*>& args);
// Counts a launch of a program compiled for buckets (and its padding) in the metrics.
void note_padded_launch(const CompiledOp& op);
// Device copy of a bucketed call's symbols (the program's last input).
runtime::BufferPtr symbols_buffer(const CompiledOp& op, int device);
// Remembers work launched on `device` (whose first output is `output`) so synchronize() and
// torch.tpu.Event can wait for it.
void track(const runtime::BufferPtr& output, int device);
// Runtime-check flags of launched work, inspected at the next sync.
void queue_checks(const std::vector<std::string>& messages, const std::vector<runtime::BufferPtr>& flags);

// A runtime check of an op failed (Ctx::require); built from the check's message, whose first
// character is its lowering::CheckError.
struct CheckFailure : std::runtime_error {
  explicit CheckFailure(const std::string& coded)
      : std::runtime_error(coded.substr(1)), kind(static_cast<lowering::CheckError>(coded.at(0))) {}
  lowering::CheckError kind;
};

}  // namespace tpu::exec
