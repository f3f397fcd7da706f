#include "exec/fused_graph.h"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <functional>
#include <map>
#include <mutex>
#include <unordered_map>

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

namespace tpu::exec {

namespace {

// Where a node's storage slot takes its value from: a concrete buffer or an earlier node.
struct Source {
  runtime::BufferPtr buffer;
  int node = -1, output = -1;
};

struct Node {
  std::string location;                              // user source line that recorded it
  OpCall call;                                       // storages point at `snapshots`
  std::vector<std::unique_ptr<Storage>> snapshots;   // storage metadata at record time
  std::vector<Source> sources;                       // per storage slot
  std::vector<std::weak_ptr<PendingValue>> outputs;  // written storages, then new outputs
  std::shared_ptr<const CompiledOp> op;              // plan (and layout of a strict compile)
  std::string key;
};

struct Graph {
  uint64_t id = 1;
  int device = 0;
  std::vector<Node> nodes;
  std::string first_key;  // key of the first node: seeing it again means the sequence repeats
};

std::recursive_mutex g_mutex;
Graph g_graph;
size_t g_max_nodes = 4096;

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

void run_graph(Graph& g) {
  if (g.nodes.empty()) return;
  ScopedSpan span(SpanKind::Flush, "fused graph of " + std::to_string(g.nodes.size()) + " ops", g.device);
  std::vector<Node> nodes = std::move(g.nodes);
  g.nodes.clear();
  g.first_key.clear();
  ++g.id;  // values recorded from now on belong to the next graph
  const int device = g.device;

  // Program key: every node's key, where its inputs come from, and which outputs are live.
  std::string key = "fused";
  std::vector<std::pair<size_t, size_t>> structure_at;  // each node's source bytes in `key`
  std::vector<runtime::BufferPtr> params;               // distinct input buffers, first-use order
  std::unordered_map<const runtime::Buffer*, int> param_index;
  std::vector<std::vector<int>> source_param(nodes.size());
  std::unordered_map<const runtime::Buffer*, long> graph_holds;  // references held by nodes
  for (size_t n = 0; n < nodes.size(); ++n) {
    const Node& node = nodes[n];
    append_bytes(key, static_cast<uint32_t>(node.key.size()));
    key += node.key;
    const size_t structure_start = key.size();
    std::vector<bool> needed = storages_read(node.call);
    for (size_t s = 0; s < node.sources.size(); ++s) {
      const Source& src = node.sources[s];
      if (src.buffer) ++graph_holds[src.buffer.get()];
      int p = -1;
      if (needed[s] && src.node < 0 && src.buffer) {
        auto it = param_index.find(src.buffer.get());
        if (it == param_index.end()) {
          it = param_index.emplace(src.buffer.get(), static_cast<int>(params.size())).first;
          params.push_back(src.buffer);
        }
        p = it->second;
      }
      source_param[n].push_back(p);
      append_bytes(key, static_cast<int32_t>(needed[s] ? p : -2));
      append_bytes(key, static_cast<int32_t>(src.node));
      append_bytes(key, static_cast<int32_t>(src.output));
    }
    for (const auto& w : node.outputs) append_bytes(key, static_cast<uint8_t>(!w.expired()));
    structure_at.emplace_back(structure_start, key.size());
  }

  std::vector<std::shared_ptr<PendingValue>> live;  // program outputs in order
  for (const Node& node : nodes)
    for (const auto& w : node.outputs)
      if (auto p = w.lock()) live.push_back(p);

  // Donation: a live value that replaces a parameter buffer of its own type may be written
  // into that buffer (parameter and optimizer-state updates). Part of the key: it changes the
  // program.
  std::vector<std::pair<int, int>> aliases;  // (parameter, live output)
  std::string alias_bytes;
  for (size_t k = 0; k < live.size(); ++k) {
    auto it = live[k]->donor ? param_index.find(live[k]->donor) : param_index.end();
    if (it == param_index.end() ||
        std::any_of(aliases.begin(), aliases.end(), [&](const auto& a) { return a.first == it->second; }))
      continue;
    aliases.emplace_back(it->second, static_cast<int>(k));
    append_bytes(alias_bytes, static_cast<int32_t>(it->second));
    append_bytes(alias_bytes, static_cast<int32_t>(k));
  }
  key += alias_bytes;

  CompiledOpPtr program = op_cache().find(key);
  counters().ops_dispatched++;
  if (program) {
    counters().cache_hits++;
  } else {
    counters().cache_misses++;
    ir::Builder b;
    std::vector<ir::Value> param_values;
    // Parameters: distinct buffers first, then each node's scalars and rng state as its ops are
    // emitted (the argument order below follows the same declaration order).
    for (size_t n = 0; n < nodes.size(); ++n) {
      const Node& node = nodes[n];
      for (size_t s = 0; s < node.sources.size(); ++s) {
        int p = source_param[n][s];
        if (p >= static_cast<int>(param_values.size())) {
          const Storage& snap = *node.snapshots[s];
          param_values.push_back(b.param(snap.padded ? ir::Type{snap.dtype, snap.padded->bounds}
                                                     : ir::Type{snap.dtype, {snap.numel_as(snap.dtype)}}));
        }
      }
    }
    std::vector<std::vector<lowering::StorageValue>> outputs(nodes.size());
    std::vector<ir::Value> results;
    std::vector<ir::Value> check_values;
    auto program_op = std::make_shared<CompiledOp>();
    for (size_t n = 0; n < nodes.size(); ++n) {
      const Node& node = nodes[n];
      std::map<int, lowering::StorageValue> current;
      std::vector<bool> needed = storages_read(node.call);
      for (size_t s = 0; s < node.sources.size(); ++s) {
        if (!needed[s]) continue;
        const Source& src = node.sources[s];
        if (src.node >= 0) {
          current[s] = outputs[src.node][src.output];
        } else if (source_param[n][s] >= 0) {
          current[s] =
              storage_parameter(b, param_values[source_param[n][s]], node.call, static_cast<int>(s), {});
        } else {  // never written: zeros
          const int64_t numel = storage_numel(node.call, s);
          current[s].data = lowering::hlo::full(b, ir::Type{storage_dtype(node.call, s), {numel}}, 0);
          current[s].sizes = {numel};
        }
      }
      std::vector<ir::Value> scalars;
      for (const HostScalar& h : node.call.scalars) scalars.push_back(b.param(ir::Type{h.dtype, {}}));
      ir::Value rng;
      if (node.call.random) rng = b.param(ir::Type{ir::DType::U64, {2}});
      EmittedOp e = emit_op(b, node.call, node.op->plan, current, scalars, rng, {});
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
            node.location.empty() ? message : message + " (recorded at " + node.location + ")");
        check_values.push_back(ok);
      }
    }
    // Live values first, then the runtime-check flags (as single-op programs lay them out).
    results.insert(results.end(), check_values.begin(), check_values.end());
    b.set_results(results);
    for (const auto& [param, output] : aliases) b.alias(param, output);
    // The same key with process-independent node keys, for the disk cache (built on misses only).
    std::string pkey = "fused";
    for (size_t n = 0; n < nodes.size(); ++n) {
      std::string node_pkey = persistent_key(nodes[n].call, nodes[n].key);
      if (node_pkey.empty()) {
        pkey.clear();
        break;
      }
      append_bytes(pkey, static_cast<uint32_t>(node_pkey.size()));
      pkey += node_pkey;
      pkey.append(key, structure_at[n].first, structure_at[n].second - structure_at[n].first);
    }
    if (!pkey.empty()) pkey += alias_bytes;
    std::vector<std::string> messages = program_op->layout.check_messages;
    const bool loaded = load_compiled_op(pkey, *program_op);
    if (loaded) {
      program_op->layout.check_messages = messages;
    } else {
      std::vector<const OpCall*> calls;
      for (const Node& node : nodes) calls.push_back(&node.call);
      note_compile(calls);
      compile_into(*program_op, b.module_text(), "a fused graph of " + std::to_string(nodes.size()) + " ops");
      store_compiled_op(pkey, *program_op);
    }
    // Named by size and a fingerprint of its key (the process-independent one where there is
    // one), so per-program times tell graphs apart and dumps of two runs share names.
    const std::string& identity = pkey.empty() ? key : pkey;
    char id[16];
    std::snprintf(id, sizeof id, "%06zx", std::hash<std::string>{}(identity) & 0xffffff);
    program_op->op_name = "fused graph of " + std::to_string(nodes.size()) + " ops #" + id;
    if (dump_enabled()) {
      // The lines that recorded the graph's ops (the first few), not the graph lock's holder.
      std::vector<std::string> lines;
      for (const Node& node : nodes)
        if (!node.location.empty() && lines.size() < 8 &&
            std::find(lines.begin(), lines.end(), node.location) == lines.end())
          lines.push_back(node.location);
      dump_program({program_op->op_name, identity, b.module_text(), *program_op->executable, loaded,
                    program_op->compile_seconds, lines});
    }
    op_cache().insert(key, program_op);
    program = program_op;
  }
  program->uses++;

  // Arguments in parameter order: buffers, then per node its scalars and rng state.
  std::vector<runtime::BufferPtr> keep = params;
  std::vector<PJRT_Buffer*> args;
  for (const auto& p : params) args.push_back(p->raw());
  for (const Node& node : nodes) append_runtime_inputs(node.call, keep, args);
  // A parameter is donated when only this graph holds it (`params`, `keep`, node sources). The
  // graph's runtime checks do not block it: as in strict mode they are raised after the values
  // were assigned.
  std::vector<int64_t> non_donatable;
  for (const auto& [param, output] : aliases)
    if (params[param].use_count() > 2 + graph_holds[params[param].get()]) non_donatable.push_back(param);
  std::vector<runtime::BufferPtr> outs =
      launch_program(*program, args, device, aliases.size(), non_donatable);
  for (size_t k = 0; k < live.size() && k < outs.size(); ++k) live[k]->buffer = outs[k];
  if (g_capture.active) note_captured_run(nodes, program, params, keep, aliases, live, device);
}

}  // namespace

std::vector<std::shared_ptr<PendingValue>> record(CompiledOpPtr op, const OpCall& call,
                                                  const std::string& key) {
  // Before taking the graph lock: the hook takes the GIL.
  std::string location = current_source_location();
  std::lock_guard<std::recursive_mutex> lock(g_mutex);
  if (!g_graph.nodes.empty() && (call.device != g_graph.device || g_graph.nodes.size() >= g_max_nodes ||
                                 (key == g_graph.first_key && !g_capture.active)))
    run_graph(g_graph);
  if (g_graph.nodes.empty()) {
    g_graph.device = call.device;
    g_graph.first_key = key;
  }
  const int node_index = static_cast<int>(g_graph.nodes.size());
  Node node;
  node.location = std::move(location);
  node.key = key;
  node.call = call;
  node.op = op;
  for (size_t s = 0; s < call.storages.size(); ++s) {
    Storage* st = call.storages[s];
    st->resolve();
    Source src;
    if (st->pending) {
      // A pending value of an earlier graph that never ran (its compile failed) is lost.
      if (st->pending->graph_id != g_graph.id)
        throw std::runtime_error(
            "torch_tpu: " + call.op_name +
            " reads a tensor whose value was lost when an earlier fused graph failed to run");
      src.node = st->pending->node;
      src.output = st->pending->output;
    } else {
      src.buffer = st->buffer;
    }
    node.sources.push_back(std::move(src));
    auto snap = std::make_unique<Storage>();
    snap->nbytes = st->nbytes;
    snap->device = st->device;
    snap->defined = st->defined;
    snap->dtype = st->dtype;
    snap->padded = st->padded;
    node.call.storages[s] = snap.get();
    node.snapshots.push_back(std::move(snap));
  }
  // New values: written storages (in order of first write), then fresh outputs.
  std::vector<int> written = unique_written_storages(call);
  int out_index = 0;
  for (int s : written) {
    auto pv = std::make_shared<PendingValue>();
    pv->graph_id = g_graph.id;
    pv->node = node_index;
    pv->output = out_index++;
    Storage* st = call.storages[s];
    ir::DType dtype = st->dtype;
    for (int v : call.written_views)
      if (call.views[v].storage == s) dtype = call.views[v].dtype;
    if (st->defined && dtype == st->dtype) pv->donor = st->pending ? st->pending->donor : st->buffer.get();
    st->buffer.reset();
    st->padded.reset();
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

}  // namespace tpu::exec
