#include "exec/fused_graph.h"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <functional>
#include <map>
#include <mutex>
#include <unordered_map>
#include <utility>

#include "exec/automatic_dynamic.h"
#include "exec/bucket_policy.h"
#include "exec/compiled_op_store.h"
#include "exec/device_context.h"
#include "exec/executor.h"
#include "exec/metrics.h"
#include "exec/op_program.h"
#include "exec/program_dump.h"
#include "exec/recompile_log.h"
#include "exec/source_location.h"
#include "exec/timeline.h"
#include "lowering/core/hlo.h"
#include "lowering/indexing/storage_view.h"

namespace tpu::exec {

const char* const kRanPaddedReason = "it ran padded (its sizes vary)";

namespace {

// Where a node's storage slot takes its value from: a concrete buffer or an earlier node.
struct Source {
  runtime::BufferPtr buffer;
  int node = -1, output = -1;
};

struct Node {
  const std::string* location = nullptr;             // user source line that recorded it
  OpCall call;                                       // storages point at `snapshots`
  std::vector<Storage> snapshots;                    // storage metadata at record time
  std::vector<Source> sources;                       // per storage slot
  std::vector<std::weak_ptr<PendingValue>> outputs;  // written storages, then new outputs
  std::shared_ptr<const CompiledOp> op;              // plan (and layout of a strict compile)
  std::string key;

  Node() = default;
  Node(Node&&) noexcept = default;  // keeps `snapshots` where `call` points
  Node& operator=(Node&&) noexcept = default;
  Node(const Node&) = delete;
};

struct Graph {
  uint64_t id = 1;
  int device = 0;
  std::vector<Node> nodes;
  std::string first_key;   // key of the first node that reads a value: seeing it again means
                           // the sequence repeats
  size_t first_index = 0;  // that node's index
};

std::recursive_mutex g_mutex;
Graph g_graph;
size_t g_max_nodes = 4096;
bool g_repeat_cuts = true;
bool g_next_may_cut = false;  // the first op recorded since repeat cuts were turned off

// The nodes of graphs that have run, freed when the host next blocks on the device
// (free_ran_graphs) rather than at the flush: freeing a decode step's 400 nodes (their vectors,
// strings and snapshots) was about 9 % of its host time, while the host later idles in the stop
// check's wait for the program. Their buffer references are dropped at the flush, so memory is
// released as before; at most a few graphs wait.
std::vector<std::vector<Node>> g_ran;
constexpr size_t kMaxRanGraphs = 4;

// The capture in progress (begin_capture .. end_capture), filled by the run of its graph.
struct Capture {
  bool active = false;
  std::vector<Storage*> inputs;
  std::unordered_map<const runtime::Buffer*, int> input_of;  // input buffer -> input index
  int runs = 0;
  std::string why;  // the first reason the capture cannot be replayed
  std::shared_ptr<CapturedGraph> graph = std::make_shared<CapturedGraph>();
  std::vector<std::shared_ptr<PendingValue>> live;
};
Capture g_capture;

void note_captured_run(const std::vector<Node>& nodes, const CompiledOpPtr& program,
                       const std::vector<runtime::BufferPtr>& params,
                       const std::vector<runtime::BufferPtr>& keep,
                       const std::vector<std::pair<int, int>>& aliases,
                       const std::vector<std::shared_ptr<PendingValue>>& live, int device) {
  Capture& c = g_capture;
  if (++c.runs > 1 && c.why.empty()) c.why = "it ran as more than one program (a value was read inside it)";
  if (program->dynamic && c.why.empty()) c.why = kRanPaddedReason;
  if (!c.why.empty()) return;
  for (const Node& node : nodes)
    if (node.call.random) {
      c.why = "it has a random op (" + node.call.op_name + ")";
      return;
    }
  CapturedGraph& g = *c.graph;
  g.program = program;
  g.device = device;
  for (const auto& p : params) {
    auto it = c.input_of.find(p.get());
    if (it == c.input_of.end()) {
      c.why = "it reads a tensor that is not one of its inputs";
      return;
    }
    g.param_inputs.push_back(it->second);
  }
  g.runtime_inputs.assign(keep.begin() + static_cast<long>(params.size()), keep.end());
  g.aliases = aliases;
  c.live = live;
  for (size_t k = 0; k < live.size(); ++k) g.live_dtype.push_back(program->plan.new_outputs[k].dtype);
}

std::vector<int> unique_written_storages(const OpCall& call) {
  std::vector<int> out;
  for (int v : call.written_views) {
    int s = call.views[v].storage;
    if (std::find(out.begin(), out.end(), s) == out.end()) out.push_back(s);
  }
  return out;
}

// Launches a fused program (asynchronously) and queues its runtime-check flags; returns the
// buffers of its live values (the outputs before the flags).
std::vector<runtime::BufferPtr> launch_program(const CompiledOp& program,
                                               const std::vector<PJRT_Buffer*>& args, int device,
                                               size_t num_aliases,
                                               const std::vector<int64_t>& non_donatable) {
  counters().donated_buffers += num_aliases - non_donatable.size();
  const int64_t launch_begin = now_ns();
  std::vector<runtime::BufferPtr> outs =
      program.executable->execute(args, client().device(device), non_donatable);
  counters().executions++;
  note_execution(program.op_name, launch_begin, device, outs.empty() ? nullptr : outs[0]);
  const size_t first_check = outs.size() - program.layout.check_messages.size();
  if (first_check > 0) track(outs[0], device);
  queue_checks(program.layout.check_messages,
               std::vector<runtime::BufferPtr>(outs.begin() + first_check, outs.end()));
  outs.resize(first_check);
  return outs;
}

// How the nodes of a graph are emitted: each at its recorded shapes, or (a bucketed program) with
// a copy of its call whose storages have the layouts the graph gives them and its symbols.
struct GraphProgram {
  struct NodeCall {
    const OpCall* call = nullptr;
    OutputPlan plan;           // result types at the bounds for a bucketed node
    std::vector<int> symbols;  // per symbol of its call: its place in the graph's symbol input
  };
  std::vector<NodeCall> nodes;
  std::vector<std::unique_ptr<OpCall>> calls;       // bucketed copies of the nodes' calls
  std::vector<std::unique_ptr<Storage>> snapshots;  // their storages
  std::vector<int64_t> symbols;                     // bucketed: the nodes' symbols, equal sizes once
  std::vector<PaddedFormPtr> live_forms;            // layout of each live value (null: flat)
};

// The graph's structure: its input buffers and, per node, where each storage comes from.
struct GraphInputs {
  std::vector<runtime::BufferPtr> params;  // distinct input buffers, first-use order
  std::vector<PaddedFormPtr> param_forms;  // their layouts
  std::unordered_map<const runtime::Buffer*, int> param_index;
  std::vector<std::vector<int>> source_param;                    // per node and storage, or -1
  std::unordered_map<const runtime::Buffer*, long> graph_holds;  // references held by nodes
  std::vector<std::shared_ptr<PendingValue>> live;               // program outputs in order
  std::vector<std::pair<int, int>> live_at;                      // (node, output) of each
  bool relaid = false;  // some params were laid out afresh for this run (relayout_varied_inputs)
};

// Key bytes of where each of a node's storages comes from and which of its outputs are live.
std::string structure_bytes(const Node& node, const std::vector<bool>& needed,
                            const std::vector<int>& params) {
  std::string k;
  for (size_t s = 0; s < node.sources.size(); ++s) {
    append_bytes(k, static_cast<int32_t>(needed[s] ? params[s] : -2));
    append_bytes(k, static_cast<int32_t>(node.sources[s].node));
    append_bytes(k, static_cast<int32_t>(node.sources[s].output));
  }
  for (const auto& w : node.outputs) append_bytes(k, static_cast<uint8_t>(!w.expired()));
  return k;
}

// Donation: a live value that replaces a parameter buffer of its own type (and layout) may be
// written into that buffer (parameter and optimizer-state updates). Part of the key: it changes
// the program.
std::vector<std::pair<int, int>> donation_pairs(const GraphInputs& in,
                                                const std::vector<PaddedFormPtr>& live_forms,
                                                std::string& bytes) {
  std::vector<std::pair<int, int>> aliases;  // (parameter, live output)
  for (size_t k = 0; k < in.live.size(); ++k) {
    auto it = in.live[k]->donor ? in.param_index.find(in.live[k]->donor) : in.param_index.end();
    if (it == in.param_index.end() ||
        std::any_of(aliases.begin(), aliases.end(), [&](const auto& a) { return a.first == it->second; }))
      continue;
    const PaddedFormPtr after = k < live_forms.size() ? live_forms[k] : nullptr;
    const PaddedFormPtr& before = in.param_forms[it->second];
    if (static_cast<bool>(after) != static_cast<bool>(before) || (after && after->bounds != before->bounds))
      continue;
    aliases.emplace_back(it->second, static_cast<int>(k));
    append_bytes(bytes, static_cast<int32_t>(it->second));
    append_bytes(bytes, static_cast<int32_t>(k));
  }
  return aliases;
}

// Builds and compiles (or loads) the program of `nodes` as `gp` emits them.
// `pkey` is its persistent key (empty: not stored on disk), `key` the in-memory one.
CompiledOpPtr compile_graph(const std::vector<Node>& nodes, const GraphInputs& in, const GraphProgram& gp,
                            const std::vector<std::pair<int, int>>& aliases, const std::string& pkey,
                            const std::string& key) {
  ir::Builder b;
  std::vector<ir::Value> param_values;
  // Parameters: distinct buffers first, then each node's scalars and rng state as its ops are
  // emitted, then the symbols (the argument order in run_graph follows the same declaration order).
  for (size_t n = 0; n < nodes.size(); ++n) {
    const Node& node = nodes[n];
    for (size_t s = 0; s < node.sources.size(); ++s) {
      int p = in.source_param[n][s];
      if (p >= static_cast<int>(param_values.size())) {
        const Storage& snap = node.snapshots[s];
        param_values.push_back(b.param(snap.padded ? ir::Type{snap.dtype, snap.padded->bounds}
                                                   : ir::Type{snap.dtype, {snap.numel_as(snap.dtype)}}));
      }
    }
  }
  std::vector<std::vector<ir::Value>> node_scalars(nodes.size());
  std::vector<ir::Value> node_rng(nodes.size());
  for (size_t n = 0; n < nodes.size(); ++n) {
    for (const HostScalar& h : nodes[n].call.scalars)
      node_scalars[n].push_back(b.param(ir::Type{h.dtype, {}}));
    if (nodes[n].call.random) node_rng[n] = b.param(ir::Type{ir::DType::U64, {2}});
  }
  std::vector<ir::Value> symbols;
  if (!gp.symbols.empty())
    symbols = symbol_values(b, b.param(ir::Type{ir::DType::I64, {static_cast<int64_t>(gp.symbols.size())}}));
  std::vector<std::vector<lowering::StorageValue>> outputs(nodes.size());
  std::vector<ir::Value> results;
  std::vector<ir::Value> check_values;
  auto program_op = std::make_shared<CompiledOp>();
  for (size_t n = 0; n < nodes.size(); ++n) {
    const Node& node = nodes[n];
    const OpCall& call = *gp.nodes[n].call;
    std::vector<ir::Value> own;
    for (int i : gp.nodes[n].symbols) own.push_back(symbols[i]);
    std::map<int, lowering::StorageValue> current;
    std::vector<bool> needed = storages_read(call);
    for (size_t s = 0; s < node.sources.size(); ++s) {
      if (!needed[s]) continue;
      const Source& src = node.sources[s];
      if (src.node >= 0) {
        current[s] = outputs[src.node][src.output];
      } else if (in.source_param[n][s] >= 0) {
        current[s] =
            storage_parameter(b, param_values[in.source_param[n][s]], call, static_cast<int>(s), own);
      } else {  // never written: zeros
        const int64_t numel = storage_numel(call, s);
        current[s].data = lowering::hlo::full(b, ir::Type{storage_dtype(call, s), {numel}}, 0);
        current[s].sizes = {numel};
      }
    }
    EmittedOp e = emit_op(b, call, gp.nodes[n].plan, current, node_scalars[n], node_rng[n], own);
    for (int s : e.written_storages) outputs[n].push_back(current.at(s));
    outputs[n].insert(outputs[n].end(), e.new_outputs.begin(), e.new_outputs.end());
    for (size_t k = 0; k < node.outputs.size(); ++k)
      if (!node.outputs[k].expired()) {
        // The program's outputs, described as its plan (the disk cache checks both).
        const ir::Value& v = outputs[n][k].data;
        results.push_back(v);
        program_op->plan.result_types.push_back(v.type);
        program_op->plan.new_outputs.push_back({v.shape(), {1}, v.dtype()});
      }
    for (auto& [ok, message] : e.checks) {
      program_op->layout.check_messages.push_back(
          node.location->empty() ? message : message + " (recorded at " + *node.location + ")");
      check_values.push_back(ok);
    }
  }
  // Live values first, then the runtime-check flags (as single-op programs lay them out).
  results.insert(results.end(), check_values.begin(), check_values.end());
  b.set_results(results);
  for (const auto& [param, output] : aliases) b.alias(param, output);
  std::vector<std::string> messages = program_op->layout.check_messages;
  const bool loaded = load_compiled_op(pkey, *program_op);
  if (loaded) {
    program_op->layout.check_messages = messages;
  } else {
    std::vector<const OpCall*> calls;
    for (const auto& nc : gp.nodes) calls.push_back(nc.call);
    note_compile(calls);
    if (!gp.symbols.empty()) note_bucketed_graph_compile(nodes.size(), gp.symbols.size());
    compile_into(*program_op, b.module_text(),
                 "a fused graph of " + std::to_string(nodes.size()) + " ops" +
                     (gp.symbols.empty() ? "" : " (bucketed)"));
    store_compiled_op(pkey, *program_op);
  }
  // Named by size and a fingerprint of its key, so per-program times tell graphs apart and dumps
  // of two runs share names.
  const std::string& identity = pkey.empty() ? key : pkey;
  char id[16];
  std::snprintf(id, sizeof id, "%06zx", std::hash<std::string>{}(identity) & 0xffffff);
  program_op->op_name = "fused graph of " + std::to_string(nodes.size()) + " ops #" + id;
  if (dump_enabled()) {
    // The lines that recorded the graph's ops (the first few), not the graph lock's holder.
    std::vector<std::string> lines;
    for (const Node& node : nodes)
      if (!node.location->empty() && lines.size() < 8 &&
          std::find(lines.begin(), lines.end(), *node.location) == lines.end())
        lines.push_back(*node.location);
    dump_program({program_op->op_name, identity, b.module_text(), *program_op->executable, loaded,
                  program_op->compile_seconds, lines});
  }
  return program_op;
}

// The process-independent form of a graph key made of `node_keys` (exact or bucketed node keys),
// each followed by its structure bytes, then the aliases; empty when a node has none.
std::string persistent_graph_key(const char* kind, const std::vector<const OpCall*>& calls,
                                 const std::vector<std::string>& node_keys,
                                 const std::vector<std::string>& structure, const std::string& alias_bytes) {
  std::string pkey = kind;
  for (size_t n = 0; n < calls.size(); ++n) {
    std::string node_pkey = persistent_key(*calls[n], node_keys[n]);
    if (node_pkey.empty()) return {};
    append_bytes(pkey, static_cast<uint32_t>(node_pkey.size()));
    pkey += node_pkey;
    pkey += structure[n];
  }
  return pkey + alias_bytes;
}

// A flat input whose sizes varied (what a loop carries out of its exact first step: a KV cache,
// the tokens so far) is laid out for its bucket through the host before the graph is compiled for
// buckets; taken flat, at its exact size, it would cost one more program, compiled again when the
// next step passes the padded value. Only values of at most 64 MiB: the copy waits for them.
// `slot_at`: each node's first slot in `varied` (shape_slots order).
void relayout_varied_inputs(std::vector<Node>& nodes, GraphInputs& in, const std::vector<bool>& varied,
                            const std::vector<size_t>& slot_at) {
  std::vector<bool> done(in.params.size(), false);
  for (size_t n = 0; n < nodes.size(); ++n) {
    const OpCall& call = nodes[n].call;
    size_t slot = slot_at[n];
    for (const TensorView& view : call.views) {
      const size_t rank = view.geometry.sizes.size();
      const std::vector<bool> sizes_varied(varied.begin() + static_cast<long>(slot),
                                           varied.begin() + static_cast<long>(slot + rank));
      slot += 2 * rank + 1;
      const int p = in.source_param[n][view.storage];
      const Storage& snap = nodes[n].snapshots[view.storage];
      if (p < 0 || done[p] || in.param_forms[p] || snap.dtype != view.dtype ||
          !lowering::covers_storage_densely(view.geometry, snap.numel_as(view.dtype)))
        continue;
      PaddedFormPtr form = varied_form(view.geometry.sizes, view.geometry.strides, sizes_varied);
      const int itemsize = ir::itemsize(view.dtype);
      if (!form || form->capacity() * itemsize > (int64_t{64} << 20)) continue;
      std::vector<uint8_t> host(static_cast<size_t>(snap.numel_as(view.dtype) * itemsize));
      download_elements(*in.params[p], nullptr, itemsize, host.data(), host.size());
      in.params[p] = upload_padded(host.data(), view.dtype, *form, snap.device);
      in.param_forms[p] = form;
      for (size_t m = 0; m < nodes.size(); ++m)
        for (size_t t = 0; t < nodes[m].snapshots.size(); ++t)
          if (in.source_param[m][t] == p) nodes[m].snapshots[t].padded = form;
      done[p] = true;
      in.relaid = true;
    }
  }
}

// The graph compiled for the buckets of its varying sizes (docs/dynamic_shapes.md), or null when
// nothing in it varies or it cannot run padded. Sets `gp` (how it emits its nodes) and the
// aliases of the program it returns.
CompiledOpPtr bucketed_graph(std::vector<Node>& nodes, GraphInputs& in,
                             const std::vector<std::string>& structure, GraphProgram& gp,
                             std::vector<std::pair<int, int>>& aliases) {
  std::string free_key = "fused";
  std::vector<int64_t> slots;
  std::vector<size_t> slot_at;  // each node's first slot
  bool padded_input = false;
  for (size_t n = 0; n < nodes.size(); ++n) {
    // A graph is a sequence of ops, so its record needs no size pattern (automatic_dynamic.h)
    // to tell its ops apart; a size coinciding with another in one step does not recompile it.
    free_key += nodes[n].call.shape_free_key();
    free_key += structure[n];
    slot_at.push_back(slots.size());
    const std::vector<int64_t> own = shape_slots(nodes[n].call, nodes[n].op->plan);
    slots.insert(slots.end(), own.begin(), own.end());
    for (size_t s = 0; s < nodes[n].snapshots.size(); ++s)
      padded_input |= in.source_param[n][s] >= 0 && nodes[n].snapshots[s].padded != nullptr;
  }
  std::vector<bool> varied = varied_slots(free_key, slots);
  if (varied.empty() && !padded_input) return nullptr;
  varied.resize(slots.size(), false);
  // Inputs laid out afresh serve the bucketed program only: a graph that stays exact takes them
  // as they were (its program, keyed by their layout at record time, may be stored on disk).
  const std::vector<runtime::BufferPtr> params_before = in.params;
  const std::vector<PaddedFormPtr> forms_before = in.param_forms;
  relayout_varied_inputs(nodes, in, varied, slot_at);
  auto stay_exact = [&]() -> CompiledOpPtr {
    if (!in.relaid) return nullptr;
    for (size_t n = 0; n < nodes.size(); ++n)
      for (size_t s = 0; s < nodes[n].snapshots.size(); ++s)
        if (const int p = in.source_param[n][s]; p >= 0) nodes[n].snapshots[s].padded = forms_before[p];
    in.params = params_before;
    in.param_forms = forms_before;
    in.relaid = false;
    return nullptr;
  };
  std::map<std::pair<int, int>, PaddedFormPtr> produced;  // (node, output) -> layout
  std::unordered_map<int64_t, int> size_symbols;          // size -> its symbol in the graph
  std::vector<std::string> node_keys;
  std::vector<const OpCall*> calls;
  for (size_t n = 0; n < nodes.size(); ++n) {
    const Node& node = nodes[n];
    auto call = std::make_unique<OpCall>(node.call);
    for (size_t s = 0; s < call->storages.size(); ++s) {
      auto snap = std::make_unique<Storage>(node.snapshots[s]);
      snap->buffer.reset();
      snap->pending.reset();
      if (node.sources[s].node >= 0) {
        auto it = produced.find({node.sources[s].node, node.sources[s].output});
        snap->padded = it == produced.end() ? nullptr : it->second;
      }
      call->storages[s] = snap.get();
      gp.snapshots.push_back(std::move(snap));
    }
    const std::vector<bool> own(varied.begin() + slot_at[n],
                                varied.begin() + (n + 1 < slot_at.size() ? slot_at[n + 1] : varied.size()));
    call->dynamic = dynamic_spec(*call, node.op->plan, own);
    GraphProgram::NodeCall nc;
    nc.call = call.get();
    int out = 0;
    if (call->dynamic) {
      // Equal sizes share one symbol across the graph too (DynamicSpec::add_size): a node then
      // sees the sizes of the values earlier nodes produced as its own.
      const DynamicSpec& spec = *call->dynamic;
      for (size_t i = 0; i < spec.values.size(); ++i) {
        const int fresh = static_cast<int>(gp.symbols.size());
        const int g = spec.is_size[i] ? size_symbols.try_emplace(spec.values[i], fresh).first->second : fresh;
        if (g == fresh) gp.symbols.push_back(spec.values[i]);
        nc.symbols.push_back(g);
      }
      nc.plan = bucketed_plan(node.op->plan, *call->dynamic, /*bound_new_outputs=*/false);
      for (int s : unique_written_storages(*call))
        produced[{static_cast<int>(n), out++}] = written_form(*call, call->dynamic.get(), s);
      for (size_t k = 0; k < nc.plan.new_outputs.size(); ++k)
        produced[{static_cast<int>(n), out++}] = output_form(node.op->plan, *call->dynamic, k);
      node_keys.push_back(bucketed_key(*call, node.op->plan));
      for (int g : nc.symbols) append_bytes(node_keys.back(), g);
    } else {
      nc.plan = node.op->plan;
      node_keys.push_back(call->key());
    }
    calls.push_back(call.get());
    gp.nodes.push_back(std::move(nc));
    gp.calls.push_back(std::move(call));
  }
  if (gp.symbols.empty()) return stay_exact();
  for (const auto& [n, k] : in.live_at) {
    auto it = produced.find({n, k});
    gp.live_forms.push_back(it == produced.end() ? nullptr : it->second);
  }
  std::string alias_bytes;
  aliases = donation_pairs(in, gp.live_forms, alias_bytes);
  std::string key = "fused-bucketed";
  for (size_t n = 0; n < nodes.size(); ++n) {
    append_bytes(key, static_cast<uint32_t>(node_keys[n].size()));
    key += node_keys[n];
    key += structure[n];
  }
  key += alias_bytes;
  if (CompiledOpPtr program = op_cache().find(key)) return program;
  std::string pkey = persistent_graph_key("fused-bucketed", calls, node_keys, structure, alias_bytes);
  try {
    CompiledOpPtr program = compile_graph(nodes, in, gp, aliases, pkey, key);
    op_cache().insert(key, program);
    return program;
  } catch (const std::exception& e) {  // as for a single op (executor.cpp: bucketed_entry)
    mark_not_paddable(free_key);
    note_not_paddable("a fused graph of " + std::to_string(nodes.size()) + " ops", e.what());
    return stay_exact();
  }
}

void run_graph(Graph& g) {
  if (g.nodes.empty()) return;
  ScopedSpan span(SpanKind::Flush, "fused graph of " + std::to_string(g.nodes.size()) + " ops", g.device);
  std::vector<Node> nodes = std::move(g.nodes);
  g.nodes.clear();
  g.first_key.clear();
  ++g.id;  // values recorded from now on belong to the next graph
  const int device = g.device;

  // Program key: every node's key, where its inputs come from, and which outputs are live.
  GraphInputs in;
  in.source_param.resize(nodes.size());
  std::vector<std::string> structure;
  std::string key = "fused";
  for (size_t n = 0; n < nodes.size(); ++n) {
    const Node& node = nodes[n];
    std::vector<bool> needed = storages_read(node.call);
    for (size_t s = 0; s < node.sources.size(); ++s) {
      const Source& src = node.sources[s];
      if (src.buffer) ++in.graph_holds[src.buffer.get()];
      int p = -1;
      if (needed[s] && src.node < 0 && src.buffer) {
        auto it = in.param_index.find(src.buffer.get());
        if (it == in.param_index.end()) {
          it = in.param_index.emplace(src.buffer.get(), static_cast<int>(in.params.size())).first;
          in.params.push_back(src.buffer);
          in.param_forms.push_back(node.snapshots[s].padded);
        }
        p = it->second;
      }
      in.source_param[n].push_back(p);
    }
    structure.push_back(structure_bytes(node, needed, in.source_param[n]));
    append_bytes(key, static_cast<uint32_t>(node.key.size()));
    key += node.key;
    key += structure.back();
    for (size_t k = 0; k < node.outputs.size(); ++k)
      if (auto p = node.outputs[k].lock()) {
        in.live.push_back(p);
        in.live_at.emplace_back(static_cast<int>(n), static_cast<int>(k));
      }
  }
  std::string alias_bytes;
  std::vector<std::pair<int, int>> aliases = donation_pairs(in, {}, alias_bytes);
  key += alias_bytes;

  CompiledOpPtr program = op_cache().find(key);
  counters().ops_dispatched++;
  if (program) {
    counters().cache_hits++;
    aliases = program->graph_aliases;
  } else {
    counters().cache_misses++;
    GraphProgram gp;
    CompiledOpPtr bucketed;
    if (dynamic_shapes_enabled()) bucketed = bucketed_graph(nodes, in, structure, gp, aliases);
    if (bucketed) {
      // This exact graph runs the bucketed program with its own symbols and layouts.
      program = std::make_shared<CompiledOp>(*bucketed);
      auto spec = std::make_shared<DynamicSpec>();
      spec->values = gp.symbols;
      program->dynamic = spec;
      program->output_forms = gp.live_forms;
      program->padded_elements = program->real_elements = 0;
      for (size_t k = 0; k < in.live.size(); ++k) {
        const PaddedFormPtr& f = gp.live_forms[k];
        if (!f) continue;
        int64_t n = 1;
        for (int64_t s : f->sizes) n *= s;
        program->real_elements += n;
        program->padded_elements += f->capacity();
      }
    } else {
      gp = GraphProgram();
      for (const Node& node : nodes) gp.nodes.push_back({&node.call, node.op->plan, {}});
      alias_bytes.clear();
      aliases = donation_pairs(in, {}, alias_bytes);
      std::vector<const OpCall*> calls;
      std::vector<std::string> node_keys;
      for (const Node& node : nodes) {
        calls.push_back(&node.call);
        node_keys.push_back(node.key);
      }
      std::string pkey = persistent_graph_key("fused", calls, node_keys, structure, alias_bytes);
      program = compile_graph(nodes, in, gp, aliases, pkey, key);
    }
    program->graph_aliases = aliases;
    if (!in.relaid) op_cache().insert(key, program);
  }
  program->uses++;
  if (program->dynamic) note_padded_launch(*program);

  // Arguments in parameter order: buffers, then per node its scalars and rng state, then symbols.
  std::vector<runtime::BufferPtr> keep = in.params;
  std::vector<PJRT_Buffer*> args;
  for (const auto& p : in.params) args.push_back(p->raw());
  for (const Node& node : nodes) append_runtime_inputs(node.call, keep, args);
  if (program->dynamic) {
    keep.push_back(symbols_buffer(*program, device));
    args.push_back(keep.back()->raw());
  }
  // A parameter is donated when only this graph holds it (`params`, `keep`, node sources). The
  // graph's runtime checks do not block it: as in strict mode they are raised after the values
  // were assigned.
  std::vector<int64_t> non_donatable;
  for (const auto& [param, output] : aliases)
    if (in.params[param].use_count() > 2 + in.graph_holds[in.params[param].get()])
      non_donatable.push_back(param);
  std::vector<runtime::BufferPtr> outs =
      launch_program(*program, args, device, aliases.size(), non_donatable);
  for (size_t k = 0; k < in.live.size() && k < outs.size(); ++k) {
    in.live[k]->buffer = outs[k];
    in.live[k]->padded = k < program->output_forms.size() ? program->output_forms[k] : nullptr;
  }
  if (g_capture.active) note_captured_run(nodes, program, in.params, keep, aliases, in.live, device);
  for (Node& node : nodes) {
    for (Storage& s : node.snapshots) {
      s.buffer.reset();
      s.pending.reset();
      s.host_copy.reset();
    }
    for (Source& src : node.sources) src.buffer.reset();
  }
  if (g_ran.size() >= kMaxRanGraphs) g_ran.erase(g_ran.begin());
  g_ran.push_back(std::move(nodes));
}

void free_ran_graphs() {
  std::vector<std::vector<Node>> ran;
  {
    // Another thread's wait leaves them to the recording thread's next one.
    std::unique_lock<std::recursive_mutex> lock(g_mutex, std::try_to_lock);
    if (!lock.owns_lock()) return;
    ran.swap(g_ran);
  }
}
const bool g_frees_while_waiting = (runtime::set_work_before_waiting(&free_ran_graphs), true);

}  // namespace

std::vector<std::shared_ptr<PendingValue>> record(CompiledOpPtr op, OpCall&& call, std::string&& key) {
  // Before taking the graph lock: the hook takes the GIL.
  static const std::string unnamed;
  const std::string* location = op->check_free && !dump_enabled() ? &unnamed : &current_source_location();
  std::lock_guard<std::recursive_mutex> lock(g_mutex);
  const bool may_cut = g_repeat_cuts || std::exchange(g_next_may_cut, false);
  if (!g_graph.nodes.empty() && (call.device != g_graph.device || g_graph.nodes.size() >= g_max_nodes ||
                                 (key == g_graph.first_key && !g_capture.active && may_cut &&
                                  g_graph.nodes.size() - g_graph.first_index >= 2)))
    run_graph(g_graph);
  if (g_graph.nodes.empty()) g_graph.device = call.device;
  // The sequence repeats when its first op that reads a value comes again. Ops that read nothing
  // (fills of fresh tensors) are left out: a loop initialising per-parameter state repeats its
  // fills with other sizes, and cut there it became one small graph per parameter, each of its
  // sizes another program. A repeat right after that op is no loop's next step either: it is
  // two alike ops in a row (Hugging Face's decode step clones its last token and its last
  // position, both [1, 1] views of [1, L]); cut there, the first became a graph of its own, with
  // one more launch per step and its own programs for every bucket. A loop of a single op is
  // better as one graph anyway.
  if (g_graph.first_key.empty()) {
    std::vector<bool> read = storages_read(call);
    if (std::find(read.begin(), read.end(), true) != read.end()) {
      g_graph.first_key = key;
      g_graph.first_index = g_graph.nodes.size();
    }
  }
  const int node_index = static_cast<int>(g_graph.nodes.size());
  Node node;
  node.location = location;
  node.key = std::move(key);
  node.call = std::move(call);
  node.op = op;
  const OpCall& recorded = node.call;
  const std::vector<Storage*> storages = recorded.storages;  // the live ones: the node's become snapshots
  // Reserved: the call points into it. It never grows again, and moving the node keeps its elements.
  node.snapshots.reserve(storages.size());
  node.sources.reserve(storages.size());
  for (size_t s = 0; s < storages.size(); ++s) {
    Storage* st = storages[s];
    st->resolve();
    Source src;
    if (st->pending) {
      // A pending value of an earlier graph that never ran (its compile failed) is lost.
      if (st->pending->graph_id != g_graph.id)
        throw std::runtime_error(
            "torch_tpu: " + recorded.op_name +
            " reads a tensor whose value was lost when an earlier fused graph failed to run");
      src.node = st->pending->node;
      src.output = st->pending->output;
    } else {
      src.buffer = st->buffer;
    }
    node.sources.push_back(std::move(src));
    Storage& snap = node.snapshots.emplace_back();
    snap.nbytes = st->nbytes;
    snap.device = st->device;
    snap.defined = st->defined;
    snap.dtype = st->dtype;
    snap.padded = st->padded;
    node.call.storages[s] = &snap;
  }
  // New values: written storages (in order of first write), then fresh outputs.
  std::vector<int> written = unique_written_storages(recorded);
  int out_index = 0;
  for (int s : written) {
    auto pv = std::make_shared<PendingValue>();
    pv->graph_id = g_graph.id;
    pv->node = node_index;
    pv->output = out_index++;
    Storage* st = storages[s];
    ir::DType dtype = st->dtype;
    for (int v : recorded.written_views)
      if (recorded.views[v].storage == s) dtype = recorded.views[v].dtype;
    if (st->defined && dtype == st->dtype) pv->donor = st->pending ? st->pending->donor : st->buffer.get();
    st->buffer.reset();
    st->padded.reset();
    st->host_copy.reset();
    st->pending = pv;
    st->dtype = dtype;
    st->defined = true;
    node.outputs.push_back(pv);
  }
  std::vector<std::shared_ptr<PendingValue>> fresh;
  for (size_t k = 0; k < op->plan.new_outputs.size(); ++k) {
    auto pv = std::make_shared<PendingValue>();
    pv->graph_id = g_graph.id;
    pv->node = node_index;
    pv->output = out_index++;
    node.outputs.push_back(pv);
    fresh.push_back(pv);
  }
  g_graph.nodes.push_back(std::move(node));
  return fresh;
}

void flush() {
  std::lock_guard<std::recursive_mutex> lock(g_mutex);
  run_graph(g_graph);
}

bool graph_empty() {
  std::lock_guard<std::recursive_mutex> lock(g_mutex);
  return g_graph.nodes.empty();
}

size_t graph_size() {
  std::lock_guard<std::recursive_mutex> lock(g_mutex);
  return g_graph.nodes.size();
}

runtime::BufferPtr concrete_buffer(Storage* s) {
  s->resolve();
  if (s->pending) {
    flush();
    s->resolve();
  }
  return s->buffer;
}

void begin_capture(const std::vector<Storage*>& inputs) {
  std::lock_guard<std::recursive_mutex> lock(g_mutex);
  run_graph(g_graph);
  g_capture = Capture();
  g_capture.active = true;
  g_capture.inputs = inputs;
  for (size_t j = 0; j < inputs.size(); ++j) {
    inputs[j]->resolve();
    const runtime::Buffer* b = inputs[j]->buffer.get();
    if (b == nullptr) {
      g_capture.why = inputs[j]->pending ? "an input's value was lost" : "an input was never written";
    } else if (!g_capture.input_of.emplace(b, static_cast<int>(j)).second) {
      g_capture.why = "two of its input storages share one buffer";
    }
  }
}

std::shared_ptr<CapturedGraph> end_capture(const std::vector<Storage*>& outputs, std::string& why) {
  std::lock_guard<std::recursive_mutex> lock(g_mutex);
  if (g_capture.active) run_graph(g_graph);
  Capture c = std::move(g_capture);
  g_capture = Capture();
  CapturedGraph& g = *c.graph;
  const std::vector<Storage*>& inputs = c.inputs;
  for (const auto& pv : c.live) {
    int j = -1;
    for (size_t i = 0; i < inputs.size() && j < 0; ++i)
      if (inputs[i]->pending == pv) j = static_cast<int>(i);
    g.live_input.push_back(j);
  }
  // An input written outside the graph's program (an upload, a CPU fallback) would not be
  // written by a replay.
  for (size_t j = 0; j < inputs.size(); ++j) {
    auto it = c.input_of.find(inputs[j]->buffer.get());
    bool unchanged = !inputs[j]->pending && it != c.input_of.end() && it->second == static_cast<int>(j);
    bool by_program =
        std::find(g.live_input.begin(), g.live_input.end(), static_cast<int>(j)) != g.live_input.end();
    if (!unchanged && !by_program && c.why.empty()) c.why = "an input was written outside its program";
  }
  std::vector<bool> held(c.live.size());
  for (size_t k = 0; k < c.live.size(); ++k) held[k] = g.live_input[k] >= 0;
  for (Storage* o : outputs) {
    auto in = std::find(inputs.begin(), inputs.end(), o);
    auto lv = std::find_if(c.live.begin(), c.live.end(), [&](const auto& pv) { return o->pending == pv; });
    g.output_input.push_back(in == inputs.end() ? -1 : static_cast<int>(in - inputs.begin()));
    g.output_live.push_back(lv == c.live.end() ? -1 : static_cast<int>(lv - c.live.begin()));
    if (lv != c.live.end()) held[lv - c.live.begin()] = true;
    if (in == inputs.end() && lv == c.live.end() && c.why.empty())
      c.why = "it returns a tensor it did not compute";
  }
  if (std::find(held.begin(), held.end(), false) != held.end() && c.why.empty())
    c.why = "it leaves a value in a tensor that is neither its input nor its output";
  why = c.why;
  return why.empty() ? c.graph : nullptr;
}

std::vector<runtime::BufferPtr> replay(const CapturedGraph& g, const std::vector<Storage*>& inputs) {
  std::lock_guard<std::recursive_mutex> lock(g_mutex);
  run_graph(g_graph);
  if (!g.program) return {};
  std::vector<runtime::BufferPtr> params;
  std::vector<PJRT_Buffer*> args;
  for (int j : g.param_inputs) {
    Storage* st = inputs[j];
    st->resolve();
    if (!st->buffer) throw std::runtime_error("torch_tpu: a compiled graph's input has no value");
    params.push_back(st->buffer);
    args.push_back(st->buffer->raw());
  }
  for (const auto& r : g.runtime_inputs) args.push_back(r->raw());
  // Donated when only the input storage and `params` hold the buffer.
  std::vector<int64_t> non_donatable;
  for (const auto& [param, live] : g.aliases)
    if (params[param].use_count() > 2) non_donatable.push_back(param);
  g.program->uses++;
  std::vector<runtime::BufferPtr> outs =
      launch_program(*g.program, args, g.device, g.aliases.size(), non_donatable);
  counters().graph_replays++;
  std::vector<runtime::BufferPtr> live(g.live_input.size());
  for (size_t k = 0; k < live.size(); ++k) {
    if (g.live_input[k] >= 0)
      inputs[g.live_input[k]]->set_buffer(outs[k], g.live_dtype[k]);
    else
      live[k] = outs[k];
  }
  return live;
}

void set_max_graph_nodes(size_t n) { g_max_nodes = n == 0 ? 1 : n; }
size_t max_graph_nodes() { return g_max_nodes; }

bool set_repeat_cuts(bool on) {
  std::lock_guard<std::recursive_mutex> lock(g_mutex);
  g_next_may_cut = !on;
  return std::exchange(g_repeat_cuts, on);
}

}  // namespace tpu::exec
