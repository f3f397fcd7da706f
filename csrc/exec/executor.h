// Compiles (on a cache miss) and launches one op call.
#pragma once
#include <functional>
#include <stdexcept>
#include <vector>

#include "exec/compile_cache.h"
#include "exec/op_call.h"

namespace tpu::exec {

// The compiled program of `call` from the cache, or compiled now with the plan that
// `make_plan` computes (called only on a miss). Counts dispatches, hits and misses.
CompiledOpPtr find_or_compile(const OpCall& call, const std::function<OutputPlan()>& make_plan);
// Launches asynchronously. Written storages get their new buffers; the buffers of new outputs
// are returned in plan order. In debug mode waits for completion, so errors surface here.
std::vector<runtime::BufferPtr> launch(const CompiledOp& op, const OpCall& call);
// Waits for every launched program; rethrows the first execution error and raises a
// CheckFailure for any runtime check (index out of range, ...) that failed since.
void synchronize();
// Raises the first failed runtime check of earlier (strict-mode) launches, if any.
void raise_failed_checks();

// A runtime check of an op failed (Ctx::require).
struct CheckFailure : std::runtime_error {
  using std::runtime_error::runtime_error;
};

}  // namespace tpu::exec
