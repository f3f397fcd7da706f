#include "exec/op_program.h"

#include <algorithm>
#include <map>
#include <stdexcept>

#include "lowering/core/float8.h"
#include "lowering/core/hlo.h"

namespace tpu::exec {

using lowering::Arg;
namespace hlo = lowering::hlo;

std::vector<bool> storages_read(const OpCall& call) {
  std::vector<bool> needed(call.storages.size(), false);
  for (const ArgSpec& a : call.args) {
    if (a.view >= 0) needed[call.views[a.view].storage] = true;
    for (int v : a.list_views)
      if (v >= 0) needed[call.views[v].storage] = true;
  }
  for (int v : call.written_views) {
    const TensorView& view = call.views[v];
    if (!lowering::covers_storage(view.geometry, call.storages[view.storage]->numel_as(view.dtype)))
      needed[view.storage] = true;
  }
  return needed;
}

std::vector<std::pair<int, int>> donatable_inputs(const OpCall& call, const ProgramLayout& layout) {
  std::vector<std::pair<int, int>> pairs;
  for (size_t k = 0; k < layout.written_storages.size(); ++k) {
    const int s = layout.written_storages[k];
    auto it = std::find(layout.input_storages.begin(), layout.input_storages.end(), s);
    if (it != layout.input_storages.end() && layout.written_dtypes[k] == storage_dtype(call, s))
      pairs.emplace_back(static_cast<int>(it - layout.input_storages.begin()), static_cast<int>(k));
  }
  return pairs;
}

EmittedOp emit_op(ir::Builder& b, const OpCall& call, const OutputPlan& plan,
                  std::map<int, ir::Value>& current, const std::vector<ir::Value>& scalars,
                  const ir::Value& rng_state) {
  lowering::Ctx ctx{b, {}, plan.result_types, rng_state, {}, call.lowering};
  // A view may see its storage as another dtype (torch.load fills storages as bytes).
  auto as_view_dtype = [&](const TensorView& view) {
    ir::Value& cur = current.at(view.storage);
    if (cur.dtype() != view.dtype) cur = lowering::reinterpret(b, cur, view.dtype);
    return cur;
  };
  auto read = [&](int v) {
    const TensorView& view = call.views[v];
    return lowering::read_view(b, as_view_dtype(view), view.geometry);
  };
  for (const ArgSpec& spec : call.args) {
    Arg a;
    a.kind = spec.kind;
    a.wrapped_number = spec.wrapped_number;
    a.i = spec.i;
    a.d = spec.d;
    a.ints = spec.ints;
    a.s = spec.s;
    if (spec.view >= 0) a.value = read(spec.view);
    if (spec.scalar >= 0) a.value = scalars[spec.scalar];
    for (int v : spec.list_views) {
      a.values.push_back(v >= 0 ? read(v) : ir::Value{});
      a.list_present.push_back(v >= 0);
    }
    for (int sc : spec.list_scalars) {
      a.values.push_back(scalars[sc]);
      a.list_present.push_back(true);
    }
    ctx.args.push_back(std::move(a));
  }

  // An op whose every result is empty computes nothing; skipping its lowering keeps the degenerate
  // shapes (a gather with an empty index of another rank, a take from an empty tensor) from ever
  // reaching XLA, whose shape checks reject some of them.
  const bool all_empty =
      !plan.result_types.empty() && std::all_of(plan.result_types.begin(), plan.result_types.end(),
                                                [](const ir::Type& t) { return t.numel() == 0; });
  std::vector<ir::Value> results;
  if (all_empty) {
    for (const ir::Type& t : plan.result_types) results.push_back(hlo::full(b, t, 0));
  } else {
    results = lowering::float8::lower(*call.lowering, ctx);
  }
  if (results.size() != plan.result_types.size())
    throw std::runtime_error("torch_tpu internal error: lowering of " + call.op_name + " returned " +
                             std::to_string(results.size()) + " values, expected " +
                             std::to_string(plan.result_types.size()));
  for (size_t k = 0; k < results.size(); ++k)
    if (!(results[k].type == plan.result_types[k]))
      throw std::runtime_error("torch_tpu internal error: lowering of " + call.op_name + " returned " +
                               results[k].type.str() + " for output " + std::to_string(k) + ", expected " +
                               plan.result_types[k].str());

  EmittedOp out;
  const size_t num_written = call.written_views.size();
  for (size_t k = 0; k < num_written; ++k) {
    const TensorView& view = call.views[call.written_views[k]];
    const int s = view.storage;
    ir::Value value = hlo::convert(b, results[k], view.dtype);
    value = hlo::broadcast_to(b, value, view.geometry.sizes);
    int64_t numel = call.storages[s]->numel_as(view.dtype);
    if (lowering::covers_storage(view.geometry, numel)) {
      current[s] = hlo::reshape(b, value, {numel});
    } else {
      current[s] = lowering::write_view(b, as_view_dtype(view), value, view.geometry);
    }
    if (std::find(out.written_storages.begin(), out.written_storages.end(), s) == out.written_storages.end())
      out.written_storages.push_back(s);
  }
  for (size_t k = num_written; k < results.size(); ++k) {
    const OutputPlan::NewOutput& o = plan.new_outputs[k - num_written];
    out.new_outputs.push_back(lowering::to_storage(b, hlo::convert(b, results[k], o.dtype), o.strides));
  }
  // Checks name their op: in a fused graph the flag may be read long after the call.
  for (auto& [ok, message] : ctx.checks)
    out.checks.emplace_back(ok, message.substr(0, 1) + call.op_name + ": " + message.substr(1));
  return out;
}

std::string build_program(const OpCall& call, const OutputPlan& plan, ProgramLayout& layout) {
  std::vector<bool> needed = storages_read(call);
  ir::Builder b;
  std::map<int, ir::Value> current;  // storage -> its latest value in the program
  layout = {};
  for (size_t s = 0; s < needed.size(); ++s) {
    if (!needed[s]) continue;
    layout.input_storages.push_back(static_cast<int>(s));
    current[s] = b.param(ir::Type{storage_dtype(call, s), {storage_numel(call, s)}});
  }
  std::vector<ir::Value> scalars;
  for (const HostScalar& h : call.scalars) scalars.push_back(b.param(ir::Type{h.dtype, {}}));
  ir::Value rng;
  if (call.random) rng = b.param(ir::Type{ir::DType::U64, {2}});

  EmittedOp op = emit_op(b, call, plan, current, scalars, rng);
  std::vector<ir::Value> outputs;
  layout.written_storages = op.written_storages;
  for (int s : op.written_storages) {
    outputs.push_back(current.at(s));
    layout.written_dtypes.push_back(current.at(s).dtype());
  }
  outputs.insert(outputs.end(), op.new_outputs.begin(), op.new_outputs.end());
  for (const auto& [ok, message] : op.checks) {
    outputs.push_back(ok);
    layout.check_messages.push_back(message);
  }
  b.set_results(outputs);
  for (const auto& [param, output] : donatable_inputs(call, layout)) b.alias(param, output);
  return b.module_text();
}

}  // namespace tpu::exec
