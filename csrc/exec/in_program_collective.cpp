#include "exec/in_program_collective.h"

#include <chrono>
#include <cstring>
#include <set>
#include <stdexcept>

#include "exec/compile_cache.h"
#include "exec/device_context.h"
#include "exec/executor.h"
#include "exec/fused_graph.h"
#include "exec/metrics.h"
#include "exec/program_dump.h"
#include "exec/timeline.h"
#include "ir/builder.h"
#include "runtime/compile_options.h"

namespace tpu::exec {

namespace {

namespace coll = lowering::collective;

void put_i64(std::string& out, int64_t v) { out.append(reinterpret_cast<const char*>(&v), sizeof v); }

// Compiles `mlir` for the spec's replicas and device assignment, timed and counted like every
// other compile.
runtime::ExecutablePtr compile_replicated(const CollectiveSpec& spec, const std::string& mlir,
                                          double& seconds) {
  runtime::Client& c = client();
  std::vector<int64_t> ids;
  for (int d : spec.devices) ids.push_back(c.device_id(static_cast<size_t>(d)));
  const std::string options =
      runtime::encode_compile_options(static_cast<int>(spec.devices.size()), 1, /*portable=*/false, ids);
  auto t0 = std::chrono::steady_clock::now();
  runtime::ExecutablePtr exe;
  try {
    exe = c.compile(mlir, options);
  } catch (const std::exception& e) {
    throw std::runtime_error("torch_tpu: compiling in-program " + collective_name(spec.kind) +
                             " failed: " + e.what() + "\n--- program ---\n" + mlir);
  }
  auto nanos =
      std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now() - t0).count();
  seconds = nanos * 1e-9;
  counters().compiles++;
  counters().compile_nanos += nanos;
  if (dump_enabled())
    dump_program({"in-program " + collective_name(spec.kind), mlir, mlir, *exe, false, seconds, {}});
  return exe;
}

}  // namespace

std::string collective_name(CollectiveKind kind) {
  switch (kind) {
    case CollectiveKind::AllReduce:
      return "all_reduce";
    case CollectiveKind::AllGather:
      return "all_gather";
    case CollectiveKind::ReduceScatter:
      return "reduce_scatter";
    case CollectiveKind::AllToAll:
      return "all_to_all";
    case CollectiveKind::Permute:
      return "permute";
  }
  return "unknown";
}

CollectiveKind parse_collective(const std::string& name) {
  for (CollectiveKind k : {CollectiveKind::AllReduce, CollectiveKind::AllGather,
                           CollectiveKind::ReduceScatter, CollectiveKind::AllToAll, CollectiveKind::Permute})
    if (collective_name(k) == name) return k;
  throw std::invalid_argument("unknown collective '" + name + "'");
}

coll::Groups CollectiveSpec::effective_groups() const {
  const int64_t n = static_cast<int64_t>(devices.size());
  if (n == 0) throw std::invalid_argument("a collective needs at least one replica");
  std::set<int> distinct(devices.begin(), devices.end());
  if (distinct.size() != devices.size())
    throw std::invalid_argument("each replica of a collective must be on its own device");
  coll::Groups g = groups;
  if (g.empty()) {
    g.emplace_back();
    for (int64_t r = 0; r < n; ++r) g[0].push_back(r);
  }
  for (const auto& group : g)
    for (int64_t id : group)
      if (id < 0 || id >= n)
        throw std::invalid_argument("replica id " + std::to_string(id) + " out of range for " +
                                    std::to_string(n) + " replicas");
  return g;
}

std::string CollectiveSpec::key() const {
  std::string k = "in_program_collective";
  k.push_back(static_cast<char>(kind));
  k.push_back(static_cast<char>(reduction.op));
  k.append(reinterpret_cast<const char*>(&reduction.premul), sizeof reduction.premul);
  k.push_back(static_cast<char>(dtype));
  put_i64(k, numel);
  put_i64(k, static_cast<int64_t>(devices.size()));
  for (int d : devices) put_i64(k, d);
  put_i64(k, static_cast<int64_t>(groups.size()));
  for (const auto& g : groups) {
    put_i64(k, static_cast<int64_t>(g.size()));
    for (int64_t id : g) put_i64(k, id);
  }
  put_i64(k, static_cast<int64_t>(pairs.size()));
  for (const auto& [s, t] : pairs) put_i64(k, s), put_i64(k, t);
  return k;
}

int64_t CollectiveSpec::output_numel() const {
  const int64_t group = static_cast<int64_t>(effective_groups()[0].size());
  switch (kind) {
    case CollectiveKind::AllGather:
      return numel * group;
    case CollectiveKind::ReduceScatter:
      if (numel % group != 0)
        throw std::invalid_argument("reduce_scatter: " + std::to_string(numel) +
                                    " input elements do not split into " + std::to_string(group) +
                                    " equal blocks");
      return numel / group;
    default:
      return numel;
  }
}

std::string build_collective_module(const CollectiveSpec& spec) {
  const coll::Groups groups = spec.effective_groups();
  ir::Builder b;
  ir::Value x = b.param(ir::Type{spec.dtype, {spec.numel}});
  ir::Value y;
  switch (spec.kind) {
    case CollectiveKind::AllReduce:
      y = coll::all_reduce(b, x, spec.reduction, groups);
      break;
    case CollectiveKind::AllGather:
      y = coll::all_gather(b, x, 0, groups);
      break;
    case CollectiveKind::ReduceScatter:
      y = coll::reduce_scatter(b, x, 0, spec.reduction, groups);
      break;
    case CollectiveKind::AllToAll:
      y = coll::all_to_all(b, x, 0, 0, groups);
      break;
    case CollectiveKind::Permute:
      for (const auto& [s, t] : spec.pairs)
        if (s >= static_cast<int64_t>(spec.devices.size()) || t >= static_cast<int64_t>(spec.devices.size()))
          throw std::invalid_argument("permute: pair (" + std::to_string(s) + ", " + std::to_string(t) +
                                      ") names a replica out of range for " +
                                      std::to_string(spec.devices.size()) + " replicas");
      y = coll::collective_permute(b, x, spec.pairs);
      break;
  }
  b.set_results({y});
  return b.module_text();
}

std::vector<runtime::BufferPtr> run_collective(const CollectiveSpec& spec,
                                               const std::vector<Storage*>& inputs) {
  if (inputs.size() != spec.devices.size())
    throw std::invalid_argument("run_collective: " + std::to_string(inputs.size()) + " inputs for " +
                                std::to_string(spec.devices.size()) + " replicas");
  const int64_t nbytes = spec.numel * ir::itemsize(spec.dtype);
  std::vector<runtime::BufferPtr> keep;
  std::vector<std::vector<PJRT_Buffer*>> args;
  for (size_t r = 0; r < inputs.size(); ++r) {
    Storage* s = inputs[r];
    runtime::BufferPtr buf = concrete_buffer(s);  // runs a pending fused graph first
    if (!buf || s->dtype != spec.dtype || s->nbytes != nbytes || s->device != spec.devices[r])
      throw std::invalid_argument("run_collective: input " + std::to_string(r) +
                                  " is not a written storage of " + std::to_string(spec.numel) + " " +
                                  ir::mlir_name(spec.dtype) + " elements on device " +
                                  std::to_string(spec.devices[r]));
    args.push_back({buf->raw()});
    keep.push_back(std::move(buf));
  }

  counters().ops_dispatched++;
  const std::string key = spec.key();
  CompiledOpPtr op = op_cache().find(key);
  if (op) {
    counters().cache_hits++;
  } else {
    counters().cache_misses++;
    op = std::make_shared<CompiledOp>();
    op->op_name = "in_program::" + collective_name(spec.kind);
    op->executable = compile_replicated(spec, build_collective_module(spec), op->compile_seconds);
    op_cache().insert(key, op);
  }
  op->uses++;

  const int64_t launch_begin = now_ns();
  std::vector<std::vector<runtime::BufferPtr>> outs = op->executable->execute_replicated(args);
  counters().executions++;
  note_execution(op->op_name, launch_begin, 0, outs.empty() || outs[0].empty() ? nullptr : outs[0][0]);
  std::vector<runtime::BufferPtr> result;
  for (size_t r = 0; r < outs.size(); ++r) {
    auto& replica = outs[r];
    if (replica.size() != 1)
      throw std::runtime_error("in-program " + collective_name(spec.kind) + " returned " +
                               std::to_string(replica.size()) + " outputs per replica, expected 1");
    if (mode() == Mode::Debug)
      replica[0]->await_ready();
    else
      track(replica[0], spec.devices[r]);
    result.push_back(std::move(replica[0]));
  }
  return result;
}

}  // namespace tpu::exec
