#include "exec/op_program.h"

#include <algorithm>
#include <map>
#include <stdexcept>

#include "lowering/hlo.h"

namespace tpu::exec {

using lowering::Arg;
namespace hlo = lowering::hlo;

std::string build_program(const OpCall& call, const OutputPlan& plan, ProgramLayout& layout) {
  const int num_storages = static_cast<int>(call.storages.size());
  std::vector<bool> needs_input(num_storages, false);
  for (const ArgSpec& a : call.args) {
    if (a.view >= 0) needs_input[call.views[a.view].storage] = true;
    for (int v : a.list_views)
      if (v >= 0) needs_input[call.views[v].storage] = true;
  }
  for (int v : call.written_views) {
    const TensorView& view = call.views[v];
    if (!lowering::covers_storage(view.geometry, call.storages[view.storage]->numel_as(view.dtype)))
      needs_input[view.storage] = true;
  }

  ir::Builder b;
  std::map<int, ir::Value> current;  // storage -> its latest value in the program
  layout = {};
  for (int s = 0; s < num_storages; ++s) {
    if (!needs_input[s]) continue;
    layout.input_storages.push_back(s);
    current[s] = b.param(ir::Type{storage_dtype(call, s), {storage_numel(call, s)}});
  }
  std::vector<ir::Value> scalars;
  for (const HostScalar& h : call.scalars) scalars.push_back(b.param(ir::Type{h.dtype, {}}));

  lowering::Ctx ctx{b, {}, plan.result_types, {}};
  if (call.random) ctx.rng_state = b.param(ir::Type{ir::DType::U64, {2}});
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

  std::vector<ir::Value> results = call.lowering->fn(ctx);
  if (results.size() != plan.result_types.size())
    throw std::runtime_error("torch_tpu internal error: lowering of " + call.op_name + " returned " +
                             std::to_string(results.size()) + " values, expected " +
                             std::to_string(plan.result_types.size()));
  for (size_t k = 0; k < results.size(); ++k)
    if (!(results[k].type == plan.result_types[k]))
      throw std::runtime_error("torch_tpu internal error: lowering of " + call.op_name +
                               " returned " + results[k].type.str() + " for output " +
                               std::to_string(k) + ", expected " + plan.result_types[k].str());

  std::vector<ir::Value> outputs;
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
    if (std::find(layout.written_storages.begin(), layout.written_storages.end(), s) ==
        layout.written_storages.end())
      layout.written_storages.push_back(s);
  }
  for (int s : layout.written_storages) {
    outputs.push_back(current.at(s));
    layout.written_dtypes.push_back(current.at(s).dtype());
  }
  for (size_t k = num_written; k < results.size(); ++k) {
    const OutputPlan::NewOutput& out = plan.new_outputs[k - num_written];
    outputs.push_back(lowering::to_storage(b, hlo::convert(b, results[k], out.dtype), out.strides));
  }
  b.set_results(outputs);
  return b.module_text();
}

}  // namespace tpu::exec
