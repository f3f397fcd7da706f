// Where the backend's time goes: its own spans — compiles, program launches, each execution's
// device time, host<->device transfers, fused-graph flushes — kept as per-program totals
// (torch_tpu.metrics.report) and, while a profiler collects them, as timed events
// (torch.profiler with ProfilerActivity.PrivateUse1; python/profiler.cpp).
//
// Device time of an execution: from when it could start (its launch, or the previous
// execution on the device finishing, whichever is later) to its outputs becoming ready, taken
// from the output buffer's ready event, so it is measured without waiting for it.
#pragma once
#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "runtime/buffer.h"

namespace tpu::exec {

enum class SpanKind { Compile, Launch, Execute, Transfer, Flush };
const char* span_kind_name(SpanKind kind);

struct Span {
  SpanKind kind;
  std::string name;
  int64_t begin_ns;  // nanoseconds since the epoch (the profiler's clock)
  int64_t end_ns;
  int device;
};

int64_t now_ns();

// While collecting, every span is also kept as an event; end_collecting hands them over.
void begin_collecting();
std::vector<Span> end_collecting();
void note_span(Span span);

// A program launched on `device` between launch_begin and now: counted in its totals, and its
// device time taken when `first_output` is ready (nullptr: a program without outputs).
void note_execution(const std::string& program, int64_t launch_begin_ns, int device,
                    const runtime::BufferPtr& first_output);

struct ProgramTimes {
  int64_t executions = 0;
  double launch_seconds = 0;  // host time inside the launch calls
  double device_seconds = 0;  // device time of the executions that finished
};
std::map<std::string, ProgramTimes> program_times();
void reset_program_times();

// A span of the calling scope (compile, transfer, flush), noted when it ends.
class ScopedSpan {
 public:
  ScopedSpan(SpanKind kind, std::string name, int device = 0)
      : kind_(kind), name_(std::move(name)), device_(device), begin_(now_ns()) {}
  ~ScopedSpan() { note_span({kind_, std::move(name_), begin_, now_ns(), device_}); }
  ScopedSpan(const ScopedSpan&) = delete;
  ScopedSpan& operator=(const ScopedSpan&) = delete;

 private:
  SpanKind kind_;
  std::string name_;
  int device_;
  int64_t begin_;
};

}  // namespace tpu::exec
