#include "exec/op_program.h"

#include <algorithm>
#include <map>
#include <stdexcept>

#include "exec/automatic_dynamic.h"
#include "exec/bucket_policy.h"
#include "lowering/core/float8.h"
#include "lowering/core/hlo.h"

namespace tpu::exec {

using lowering::Arg;
namespace hlo = lowering::hlo;

namespace {

// Whether the lowering reads argument i (declares it): an in-place op's `self` is passed to its
// functional lowering, which may not read it (zero_, fill_).
bool reads_argument(const OpCall& call, size_t i) {
  const lowering::Lowering* l = call.lowering;
  if (l == nullptr || i >= l->schema_args.size()) return true;
  const std::string& name = l->schema_args[i];
  const auto& sig = l->signature;
  return std::find(sig.reads.begin(), sig.reads.end(), name) != sig.reads.end() ||
         std::find(sig.statics.begin(), sig.statics.end(), name) != sig.statics.end();
}

}  // namespace

std::vector<bool> storages_read(const OpCall& call) {
  std::vector<bool> needed(call.storages.size(), false);
  for (size_t i = 0; i < call.args.size(); ++i) {
    const ArgSpec& a = call.args[i];
    if (!reads_argument(call, i)) continue;
    if (a.view >= 0) needed[call.views[a.view].storage] = true;
    for (int v : a.list_views)
      if (v >= 0) needed[call.views[v].storage] = true;
  }
  for (int v : call.written_views) {
    const TensorView& view = call.views[v];
    if (!lowering::covers_storage_densely(view.geometry, call.storages[view.storage]->numel_as(view.dtype)))
      needed[view.storage] = true;
  }
  return needed;
}

std::vector<std::pair<int, int>> donatable_inputs(const OpCall& call, const DynamicSpec* spec,
                                                  const ProgramLayout& layout) {
  std::vector<std::pair<int, int>> pairs;
  for (size_t k = 0; k < layout.written_storages.size(); ++k) {
    const int s = layout.written_storages[k];
    auto it = std::find(layout.input_storages.begin(), layout.input_storages.end(), s);
    if (it == layout.input_storages.end() || layout.written_dtypes[k] != storage_dtype(call, s)) continue;
    // Same buffer shape: both flat, or padded to the same bounds.
    const PaddedFormPtr before = call.storages[s]->padded, after = written_form(call, spec, s);
    if (static_cast<bool>(before) != static_cast<bool>(after) || (before && before->bounds != after->bounds))
      continue;
    pairs.emplace_back(static_cast<int>(it - layout.input_storages.begin()), static_cast<int>(k));
  }
  return pairs;
}

namespace {

using lowering::DynamicView;
using lowering::StorageValue;

ir::Value symbol(const std::vector<ir::Value>& symbols, int i) {
  return i >= 0 ? symbols.at(i) : ir::Value{};
}

// View v of the call, with its runtime quantities.
DynamicView dynamic_view(const OpCall& call, int v, const std::vector<ir::Value>& symbols) {
  const TensorView& view = call.views[v];
  DynamicView dv;
  dv.geometry = view.geometry;
  dv.bounds = view.geometry.sizes;
  const size_t rank = view.geometry.sizes.size();
  dv.sizes.resize(rank);
  dv.strides.resize(rank);
  if (!call.dynamic) return dv;
  const DynamicSpec::View& sv = call.dynamic->views[v];
  for (size_t d = 0; d < rank; ++d) {
    if (sv.sizes[d] >= 0) {
      dv.bounds[d] = bucket(view.geometry.sizes[d]);
      dv.sizes[d] = symbol(symbols, sv.sizes[d]);
    }
    dv.strides[d] = symbol(symbols, sv.strides[d]);
  }
  dv.offset = symbol(symbols, sv.offset);
  return dv;
}

// Value k returned by the lowering, sliced or padded to the plan's bounds where its dimension is
// dynamic (padding is unspecified: only the real part must be right).
ir::Value fit_result(ir::Builder& b, const OpCall& call, const ir::Value& v, const ir::Type& want, size_t k) {
  if (v.type == want || !call.dynamic || v.dtype() != want.dtype || v.rank() != want.rank()) return v;
  ir::Value out = v;
  for (int d = 0; d < v.rank(); ++d) {
    if (out.dim(d) == want.shape[d] || call.dynamic->results[k][d] < 0) continue;
    if (out.dim(d) > want.shape[d]) {
      out = hlo::slice_dim(b, out, d, 0, want.shape[d]);
    } else {
      std::vector<int64_t> low(v.rank(), 0), high(v.rank(), 0);
      high[d] = want.shape[d] - out.dim(d);
      out = hlo::pad(b, out, hlo::constant(b, out.dtype(), 0), low, high);
    }
  }
  return out;
}

}  // namespace

StorageValue storage_parameter(ir::Builder& b, const ir::Value& param, const OpCall& call, int storage,
                               const std::vector<ir::Value>& symbols) {
  const PaddedFormPtr& form = call.storages[storage]->padded;
  StorageValue v;
  if (!form) {
    v.data = param;
    v.sizes = {param.dim(0)};
    return v;
  }
  if (call.dynamic) {
    v.data = param;
    v.sizes = form->sizes;
    for (int sym : call.dynamic->storages[storage]) v.dims.push_back(symbol(symbols, sym));
    return v;
  }
  const int64_t numel = storage_numel(call, storage);
  v.data = hlo::reshape(b, hlo::slice(b, param, std::vector<int64_t>(form->sizes.size(), 0), form->sizes),
                        {numel});
  v.sizes = {numel};
  return v;
}

std::vector<ir::Value> symbol_values(ir::Builder& b, const ir::Value& param) {
  std::vector<ir::Value> out;
  for (int64_t i = 0; i < param.dim(0); ++i)
    out.push_back(hlo::reshape(b, hlo::slice(b, param, {i}, {i + 1}), {}));
  return out;
}

EmittedOp emit_op(ir::Builder& b, const OpCall& call, const OutputPlan& plan,
                  std::map<int, StorageValue>& current, const std::vector<ir::Value>& scalars,
                  const ir::Value& rng_state, const std::vector<ir::Value>& symbols) {
  lowering::Ctx ctx{b, {}, plan.result_types, rng_state, {}, call.lowering};
  // A view may see a flat storage as another dtype (torch.load fills storages as bytes); a
  // padded storage is only seen as its own.
  auto as_view_dtype = [&](const TensorView& view) -> StorageValue& {
    StorageValue& cur = current.at(view.storage);
    if (cur.data.dtype() != view.dtype) {
      if (cur.padded()) throw lowering::NotPaddable("a padded storage viewed as another dtype");
      cur.data = lowering::reinterpret(b, cur.data, view.dtype);
      cur.sizes = {cur.data.dim(0)};
    }
    return cur;
  };
  auto read = [&](int v, lowering::Dims& dims) {
    const TensorView& view = call.views[v];
    DynamicView dv = dynamic_view(call, v, symbols);
    StorageValue& cur = as_view_dtype(view);
    if (!cur.padded() && !dv.varies()) return lowering::read_view(b, cur.data, view.geometry);
    if (lowering::any_dynamic(dv.sizes)) dims = dv.sizes;
    return lowering::read_dynamic(b, cur, dv);
  };
  bool padded = false;
  for (size_t i = 0; i < call.args.size(); ++i) {
    const ArgSpec& spec = call.args[i];
    const bool declared = reads_argument(call, i);
    Arg a;
    a.kind = spec.kind;
    a.wrapped_number = spec.wrapped_number;
    a.i = spec.i;
    a.d = spec.d;
    a.ints = spec.ints;
    a.s = spec.s;
    if (spec.view >= 0 && declared) a.value = read(spec.view, a.dims);
    if (spec.scalar >= 0) a.value = scalars[spec.scalar];
    padded |= !a.dims.empty();
    for (int v : spec.list_views) {
      a.list_dims.emplace_back();
      a.values.push_back(v >= 0 && declared ? read(v, a.list_dims.back()) : ir::Value{});
      a.list_present.push_back(v >= 0);
      padded |= !a.list_dims.back().empty();
    }
    for (int sc : spec.list_scalars) {
      a.values.push_back(scalars[sc]);
      a.list_present.push_back(true);
      a.list_dims.emplace_back();
    }
    ctx.args.push_back(std::move(a));
  }
  if (call.dynamic)
    for (const std::vector<int>& result : call.dynamic->results) {
      lowering::Dims dims;
      for (int sym : result) dims.push_back(symbol(symbols, sym));
      padded |= lowering::any_dynamic(dims);
      ctx.out_dims.push_back(lowering::any_dynamic(dims) ? dims : lowering::Dims{});
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
  } else if (padded) {
    results = lowering::lower_padded(*call.lowering, ctx);
  } else {
    results = lowering::float8::lower(*call.lowering, ctx);
  }
  if (results.size() != plan.result_types.size())
    throw std::runtime_error("torch_tpu internal error: lowering of " + call.op_name + " returned " +
                             std::to_string(results.size()) + " values, expected " +
                             std::to_string(plan.result_types.size()));
  for (size_t k = 0; k < results.size(); ++k) {
    results[k] = fit_result(b, call, results[k], plan.result_types[k], k);
    if (!(results[k].type == plan.result_types[k]))
      throw std::runtime_error("torch_tpu internal error: lowering of " + call.op_name + " returned " +
                               results[k].type.str() + " for output " + std::to_string(k) + ", expected " +
                               plan.result_types[k].str());
  }

  EmittedOp out;
  const size_t num_written = call.written_views.size();
  for (size_t k = 0; k < num_written; ++k) {
    const int v = call.written_views[k];
    const TensorView& view = call.views[v];
    const int s = view.storage;
    const DynamicView dv = dynamic_view(call, v, symbols);
    ir::Value value = hlo::convert(b, results[k], view.dtype);
    value = hlo::broadcast_to(b, value, dv.bounds);
    const int64_t numel = call.storages[s]->numel_as(view.dtype);
    if (lowering::covers_storage_densely(view.geometry, numel)) {
      current[s] = lowering::result_storage(b, value, dv.sizes, view.geometry.sizes, view.geometry.strides);
    } else {
      StorageValue& cur = as_view_dtype(view);
      if (!cur.padded() && !dv.varies()) {
        cur.data = lowering::write_view(b, cur.data, value, view.geometry);
      } else {
        cur = lowering::write_dynamic(b, cur, value, dv);
      }
    }
    if (std::find(out.written_storages.begin(), out.written_storages.end(), s) == out.written_storages.end())
      out.written_storages.push_back(s);
  }
  for (size_t k = num_written; k < results.size(); ++k) {
    const OutputPlan::NewOutput& o = plan.new_outputs[k - num_written];
    out.new_outputs.push_back(lowering::result_storage(
        b, hlo::convert(b, results[k], o.dtype), k < ctx.out_dims.size() ? ctx.out_dims[k] : lowering::Dims{},
        o.sizes, o.strides));
  }
  // Checks name their op: in a fused graph the flag may be read long after the call.
  for (auto& [ok, message] : ctx.checks)
    out.checks.emplace_back(ok, message.substr(0, 1) + call.op_name + ": " + message.substr(1));
  return out;
}

std::string build_program(const OpCall& call, const OutputPlan& plan, ProgramLayout& layout) {
  std::vector<bool> needed = storages_read(call);
  ir::Builder b;
  layout = {};
  std::vector<ir::Value> params;
  for (size_t s = 0; s < needed.size(); ++s) {
    if (!needed[s]) continue;
    layout.input_storages.push_back(static_cast<int>(s));
    const PaddedFormPtr& form = call.storages[s]->padded;
    const ir::DType dtype = storage_dtype(call, static_cast<int>(s));
    params.push_back(
        b.param(form ? ir::Type{dtype, form->bounds} : ir::Type{dtype, {storage_numel(call, s)}}));
  }
  std::vector<ir::Value> scalars;
  for (const HostScalar& h : call.scalars) scalars.push_back(b.param(ir::Type{h.dtype, {}}));
  ir::Value rng;
  if (call.random) rng = b.param(ir::Type{ir::DType::U64, {2}});
  std::vector<ir::Value> symbols;
  if (call.dynamic)
    symbols = symbol_values(
        b, b.param(ir::Type{ir::DType::I64, {static_cast<int64_t>(call.dynamic->values.size())}}));
  std::map<int, StorageValue> current;  // storage -> its latest value in the program
  for (size_t i = 0; i < params.size(); ++i) {
    const int s = layout.input_storages[i];
    current[s] = storage_parameter(b, params[i], call, s, symbols);
  }

  EmittedOp op = emit_op(b, call, plan, current, scalars, rng, symbols);
  std::vector<ir::Value> outputs;
  layout.written_storages = op.written_storages;
  for (int s : op.written_storages) {
    outputs.push_back(current.at(s).data);
    layout.written_dtypes.push_back(current.at(s).data.dtype());
  }
  for (const StorageValue& o : op.new_outputs) outputs.push_back(o.data);
  for (const auto& [ok, message] : op.checks) {
    outputs.push_back(ok);
    layout.check_messages.push_back(message);
  }
  b.set_results(outputs);
  for (const auto& [param, output] : donatable_inputs(call, call.dynamic.get(), layout))
    b.alias(param, output);
  return b.module_text();
}

}  // namespace tpu::exec
