#include "exec/executor.h"

#include <algorithm>
#include <chrono>
#include <cstring>
#include <map>
#include <mutex>

#include "exec/automatic_dynamic.h"
#include "exec/bucket_policy.h"
#include "exec/compiled_op_store.h"
#include "exec/device_context.h"
#include "exec/fused_graph.h"
#include "exec/launch_marker.h"
#include "exec/metrics.h"
#include "exec/program_dump.h"
#include "exec/recompile_log.h"
#include "exec/source_location.h"
#include "exec/timeline.h"
#include "runtime/pjrt_error.h"

namespace tpu::exec {

// Runtime scalars (learning rates, epsilons, Python numbers) repeat: keep their device copies.
runtime::BufferPtr scalar_buffer(const HostScalar& s, int device) {
  static std::mutex mutex;
  static std::map<std::tuple<int, ir::DType, std::array<uint8_t, 16>>, runtime::BufferPtr> cache;
  auto key = std::make_tuple(device, s.dtype, s.bytes);
  std::lock_guard<std::mutex> lock(mutex);
  auto it = cache.find(key);
  if (it != cache.end()) return it->second;
  if (cache.size() > 4096) cache.clear();
  auto buffer = upload(s.bytes.data(), s.dtype, {}, device);
  cache.emplace(key, buffer);
  return buffer;
}

namespace {

// The first read of a storage nothing has written yet (torch.empty is lazy).
runtime::BufferPtr zeros_buffer(ir::DType dtype, int64_t numel, int device) {
  const int64_t nbytes = numel * ir::itemsize(dtype);
  std::vector<uint8_t> zeros;
  try {
    zeros.assign(static_cast<size_t>(nbytes), 0);
  } catch (const std::bad_alloc&) {
    throw runtime::OutOfMemory(
        "allocating the " + std::to_string(nbytes) + " bytes of an unwritten storage failed", nbytes);
  }
  return upload(zeros.data(), dtype, {numel}, device);
}

}  // namespace

// Completion events, not buffers, are noted (exec/launch_marker.h): holding an output would keep
// its memory alive and block its donation.
void track(const runtime::BufferPtr& b, int device) { note_launch(device, b->ready_event()); }

namespace {

struct PendingCheck {
  runtime::BufferPtr ok;
  std::string message;
};
std::mutex g_checks_mutex;
std::vector<PendingCheck> g_checks;

bool check_passed(const runtime::Buffer& ok) {
  uint8_t v = 0;
  download(ok, &v, 1);
  return v != 0;
}

// Raises the first failed check of `checks` (launched earlier, so named as such).
void raise_first_failed(const std::vector<PendingCheck>& checks) {
  for (const PendingCheck& c : checks)
    if (!check_passed(*c.ok))
      throw CheckFailure(c.message +
                         " (detected in an earlier op; set TORCH_TPU_LAUNCH_BLOCKING=1 to raise it at the op "
                         "that caused it)");
}

}  // namespace

void queue_checks(const std::vector<std::string>& messages, const std::vector<runtime::BufferPtr>& flags) {
  std::lock_guard<std::mutex> lock(g_checks_mutex);
  for (size_t k = 0; k < messages.size(); ++k) g_checks.push_back({flags[k], messages[k]});
}

void raise_failed_checks() {
  std::vector<PendingCheck> checks;
  {
    std::lock_guard<std::mutex> lock(g_checks_mutex);
    checks.swap(g_checks);
  }
  raise_first_failed(checks);
}

void raise_failed_completed_checks() {
  std::vector<PendingCheck> completed;
  {
    std::lock_guard<std::mutex> lock(g_checks_mutex);
    auto running = std::stable_partition(g_checks.begin(), g_checks.end(), [](const PendingCheck& c) {
      return !c.ok->ready_event().is_ready();
    });
    completed.assign(std::make_move_iterator(running), std::make_move_iterator(g_checks.end()));
    g_checks.erase(running, g_checks.end());
  }
  raise_first_failed(completed);
}

void synchronize() {
  flush();
  await_noted_launches();
  raise_failed_checks();
}

void forget_out_of_memory_launches() { await_noted_launches(/*keep_failed_unless_oom=*/true); }

void compile_into(CompiledOp& op, const std::string& mlir, const std::string& what) {
  ScopedSpan span(SpanKind::Compile, what);
  auto t0 = std::chrono::steady_clock::now();
  try {
    op.executable = client().compile(mlir);
  } catch (const std::exception& e) {
    throw std::runtime_error("torch_tpu: compiling " + what + " failed: " + e.what() + "\n--- program ---\n" +
                             mlir);
  }
  auto nanos =
      std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now() - t0).count();
  op.compile_seconds = nanos * 1e-9;
  counters().compiles++;
  counters().compile_nanos += nanos;
}

namespace {

// The entry of a call served by the program compiled for its buckets, or null when the call has
// nothing dynamic or cannot run padded (then it compiles at its exact shapes).
CompiledOpPtr bucketed_entry(const OpCall& call, const OutputPlan& plan, const std::string& shape_free,
                             const std::vector<bool>& varied) {
  std::shared_ptr<const DynamicSpec> spec = dynamic_spec(call, plan, varied);
  if (!spec) return nullptr;
  OpCall bcall = call;
  bcall.dynamic = spec;
  const OutputPlan bplan = bucketed_plan(plan, *spec);
  const std::string bkey = bucketed_key(bcall, plan);
  CompiledOpPtr program = op_cache().find(bkey);
  if (!program) {
    program = std::make_shared<CompiledOp>();
    program->op_name = call.op_name;
    program->plan = bplan;
    const bool loaded = load_compiled_op(bcall, bkey, *program);
    std::string mlir;
    if (!loaded) {
      try {
        mlir = build_program(bcall, bplan, program->layout);
      } catch (const std::exception& e) {
        // Not paddable, or the lowering rejects its padded operands: the call runs at exact
        // shapes (where a genuine error is raised again).
        mark_not_paddable(shape_free);
        note_not_paddable(call.op_name, e.what());
        return nullptr;
      }
      note_compile({&call});
      note_bucketed_compile(bcall, bplan);
      compile_into(*program, mlir, call.op_name + " (bucketed)");
      store_compiled_op(bcall, bkey, *program);
    }
    if (dump_enabled()) {
      ProgramLayout scratch;
      if (loaded) mlir = build_program(bcall, bplan, scratch);
      dump_program({call.op_name + " (bucketed)",
                    bkey,
                    mlir,
                    *program->executable,
                    loaded,
                    program->compile_seconds,
                    {current_source_location()}});
    }
    op_cache().insert(bkey, program);
  }
  program->uses++;
  auto entry = std::make_shared<CompiledOp>(*program);
  entry->plan = plan;
  entry->dynamic = spec;
  for (size_t k = 0; k < plan.result_types.size(); ++k) {
    entry->real_elements += plan.result_types[k].numel();
    entry->padded_elements += bplan.result_types[k].numel();
  }
  for (int s : program->layout.written_storages)
    entry->written_forms.push_back(written_form(call, spec.get(), s));
  for (size_t o = 0; o < plan.new_outputs.size(); ++o)
    entry->output_forms.push_back(output_form(plan, *spec, o));
  return entry;
}

}  // namespace

namespace {

// The automatic-dynamic record of `call` (per op, user line and size pattern): which of its sizes,
// strides and offsets have varied. An op's first four shapes compile exactly: one line serves
// several modules of a model (the blocks of each stage of a CNN, at their own widths), whose
// sizes differ in every step of a fixed-shape loop and should never be padded. An op reading a
// padded value follows its producer's dynamism at its second shape, and so does one reading an
// upload whose sizes varied at its line (a batch of another length each step): the graph
// reading it is bucketed from its second shape on, and each size would compile it again while
// the upload stayed flat.
std::vector<bool> record_shapes(const OpCall& call, const OutputPlan& plan, std::string& shape_free) {
  shape_free = call.shape_free_key() + current_source_location() + size_pattern(call, plan);
  const bool follows = std::any_of(call.storages.begin(), call.storages.end(), [](const Storage* s) {
    return s->padded || (s->host_copy && std::find(s->host_copy->varied.begin(), s->host_copy->varied.end(),
                                                   true) != s->host_copy->varied.end());
  });
  return varied_slots(shape_free, shape_slots(call, plan), follows ? 1 : 4);
}

bool reads_fresh_upload(const OpCall& call) {
  return std::any_of(call.storages.begin(), call.storages.end(),
                     [](const Storage* s) { return s->host_copy && !s->padded; });
}

CompiledOpPtr cache_hit(const std::string& key, bool compile) {
  CompiledOpPtr op = op_cache().find(key);
  if (!op || !(op->executable || !compile)) return nullptr;
  if (compile) counters().cache_hits++;
  op->uses++;
  if (op->dynamic) note_padded_launch(*op);
  return op;
}

}  // namespace

CompiledOpPtr find_or_compile(const OpCall& call, std::string& key,
                              const std::function<OutputPlan()>& make_plan, bool compile) {
  counters().ops_dispatched++;
  note_op_dispatched();
  std::shared_ptr<OutputPlan> plan;
  if (dynamic_shapes_enabled() && reads_fresh_upload(call)) {
    // The first op to read an upload fixes its layout: padded when its sizes have varied at
    // its line (a batch of another length each step) and so have the sizes of the op reading
    // it, else flat for good (a weight).
    plan = std::make_shared<OutputPlan>(make_plan());
    std::string shape_free;
    if (!record_shapes(call, *plan, shape_free).empty() && pad_uploads(call)) key = call.key();
    for (Storage* s : call.storages) s->host_copy.reset();
  }
  CompiledOpPtr op = cache_hit(key, compile);
  if (op) return op;
  op = op_cache().find(key);
  const bool fresh = !op;
  if (fresh) {
    op = std::make_shared<CompiledOp>();
    op->op_name = call.op_name;
    op->plan = plan ? *plan : make_plan();
    if (dynamic_shapes_enabled() && compile) {
      std::string shape_free;
      const std::vector<bool> varied = record_shapes(call, op->plan, shape_free);
      if (CompiledOpPtr entry = bucketed_entry(call, op->plan, shape_free, varied)) {
        counters().cache_misses++;
        note_padded_launch(*entry);
        op_cache().insert(key, entry);
        entry->uses++;
        return entry;
      }
    }
  }
  if (compile) {
    counters().cache_misses++;
    // Compiled by an earlier process: layout and executable from the persistent cache.
    const bool loaded = load_compiled_op(call, key, *op);
    std::string mlir;
    if (!loaded) {
      note_compile({&call});
      mlir = build_program(call, op->plan, op->layout);
      compile_into(*op, mlir, call.op_name);
      store_compiled_op(call, key, *op);
    }
    if (dump_enabled()) {
      ProgramLayout scratch;
      if (loaded) mlir = build_program(call, op->plan, scratch);
      dump_program({call.op_name,
                    key,
                    mlir,
                    *op->executable,
                    loaded,
                    op->compile_seconds,
                    {current_source_location()}});
    }
  } else if (fresh) {
    // Fused mode lowers the op only when its graph runs; lowering it once here, on the first
    // call with this key, raises the lowering's own checks (dtypes, arguments) at the call that
    // caused them, as strict mode does.
    ProgramLayout scratch;
    build_program(call, op->plan, scratch);
    op->check_free = scratch.check_messages.empty();
  }
  // Only an op that lowered (and compiled, when asked) enters the cache.
  if (fresh) op_cache().insert(key, op);
  op->uses++;
  return op;
}

void append_runtime_inputs(const OpCall& call, std::vector<runtime::BufferPtr>& keep,
                           std::vector<PJRT_Buffer*>& args) {
  for (const HostScalar& h : call.scalars) {
    keep.push_back(scalar_buffer(h, call.device));
    args.push_back(keep.back()->raw());
  }
  if (call.random) {
    uint64_t state[2] = {call.seed, call.rng_counter};
    keep.push_back(upload(state, ir::DType::U64, {2}, call.device));
    args.push_back(keep.back()->raw());
  }
}

void note_padded_launch(const CompiledOp& op) {
  counters().padded_launches++;
  counters().padded_elements += op.padded_elements;
  counters().real_elements += op.real_elements;
}

runtime::BufferPtr symbols_buffer(const CompiledOp& op, int device) {
  // Uploaded per launch (a few bytes): a copy kept with the entry would stay allocated on the
  // device for as long as the entry is cached.
  const std::vector<int64_t>& v = op.dynamic->values;
  return upload(v.data(), ir::DType::I64, {static_cast<int64_t>(v.size())}, device);
}

std::vector<runtime::BufferPtr> launch(const CompiledOp& op, const OpCall& call) {
  std::vector<runtime::BufferPtr> keep;  // keeps inputs alive through the launch
  std::vector<PJRT_Buffer*> args;
  for (int s : op.layout.input_storages) {
    Storage* st = call.storages[s];
    runtime::BufferPtr buf = concrete_buffer(st);
    if (!buf) {
      ir::DType dtype = storage_dtype(call, s);
      buf = zeros_buffer(dtype, storage_numel(call, s), call.device);
    }
    args.push_back(buf->raw());
    keep.push_back(std::move(buf));
  }
  // An overwritten input is donated when its storage (and `keep`) are its only holders; any
  // other holder (a storage sharing the buffer) still needs the old value. An op with runtime
  // checks donates nothing: a failed check must leave its targets unchanged.
  std::vector<int64_t> non_donatable;
  const auto donatable = donatable_inputs(call, op.dynamic.get(), op.layout);
  for (const auto& [param, output] : donatable)
    if (keep[param].use_count() > 2 || !op.layout.check_messages.empty()) non_donatable.push_back(param);
  counters().donated_buffers += donatable.size() - non_donatable.size();
  append_runtime_inputs(call, keep, args);
  if (op.dynamic) {
    keep.push_back(symbols_buffer(op, call.device));
    args.push_back(keep.back()->raw());
  }
  const int64_t launch_begin = now_ns();
  std::vector<runtime::BufferPtr> outs =
      op.executable->execute(args, client().device(call.device), non_donatable);
  counters().executions++;
  note_execution(op.op_name, launch_begin, call.device, outs.empty() ? nullptr : outs[0]);
  const size_t num_checks = op.layout.check_messages.size();
  const size_t first_check = outs.size() - num_checks;
  if (mode() == Mode::Debug) {
    for (const auto& o : outs) o->await_ready();
    // A failed check leaves every target unchanged: nothing has been assigned yet.
    for (size_t k = 0; k < num_checks; ++k)
      if (!check_passed(*outs[first_check + k])) throw CheckFailure(op.layout.check_messages[k]);
  } else {
    if (!outs.empty()) track(outs[0], call.device);
    queue_checks(op.layout.check_messages,
                 std::vector<runtime::BufferPtr>(outs.begin() + first_check, outs.end()));
  }
  outs.resize(first_check);
  const size_t num_written = op.layout.written_storages.size();
  for (size_t k = 0; k < num_written; ++k) {
    Storage* st = call.storages[op.layout.written_storages[k]];
    st->set_buffer(outs[k], op.layout.written_dtypes[k],
                   k < op.written_forms.size() ? op.written_forms[k] : nullptr);
  }
  return std::vector<runtime::BufferPtr>(outs.begin() + num_written, outs.end());
}

}  // namespace tpu::exec
