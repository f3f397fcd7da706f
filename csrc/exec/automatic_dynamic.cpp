#include "exec/automatic_dynamic.h"

#include <algorithm>
#include <mutex>
#include <numeric>
#include <unordered_map>
#include <unordered_set>

#include "exec/bucket_policy.h"
#include "exec/device_context.h"
#include "exec/op_program.h"
#include "lowering/indexing/padded_view.h"

namespace tpu::exec {

namespace {

std::mutex g_mutex;
struct Record {
  std::vector<std::vector<int64_t>> shapes;  // its first distinct shapes (all slots of a call)
  std::vector<bool> varied;                  // empty until a shape beyond those
};
std::unordered_map<std::string, Record> g_records;
std::unordered_set<std::string> g_not_paddable;

void put(std::string& k, int64_t v) { append_bytes(k, v); }

int symbol_or_constant(DynamicSpec& spec, bool varies, int64_t value) {
  return varies ? spec.add(value) : -1;
}
int size_symbol_or_constant(DynamicSpec& spec, bool varies, int64_t value) {
  return varies ? spec.add_size(value) : -1;
}

// A size may become a symbol unless it is 0 or 1 (as Dynamo specializes them).
bool sizable(int64_t n) { return n > 1; }

// Dense layout of sizes/strides with its dimensions' symbols: a padded form, or null when no
// dimension is a symbol.
PaddedFormPtr form_of(const std::vector<int64_t>& sizes, const std::vector<int64_t>& strides,
                      const std::vector<int>& symbols) {
  bool any = false;
  for (int s : symbols) any |= s >= 0;
  if (!any) return nullptr;
  std::vector<int64_t> perm = lowering::dense_permutation(sizes, strides);
  if (perm.empty()) {
    perm.resize(sizes.size());
    std::iota(perm.begin(), perm.end(), 0);
  }
  auto f = std::make_shared<PaddedForm>();
  for (int64_t d : perm) {
    const bool dyn = symbols[d] >= 0;
    f->sizes.push_back(sizes[d]);
    f->bounds.push_back(dyn ? bucket(sizes[d]) : sizes[d]);
    f->dynamic.push_back(dyn);
  }
  return f;
}

// The storage as padded_view sees it through `view`: real sizes and which are dynamic (a flat
// storage counted in the view's dtype, as a program reinterprets it).
void storage_shape(const OpCall& call, const TensorView& view, std::vector<int64_t>& sizes,
                   std::vector<bool>& dynamic) {
  const Storage* st = call.storages[view.storage];
  if (st->padded) {
    sizes = st->padded->sizes;
    dynamic = st->padded->dynamic;
  } else {
    sizes = {st->numel_as(view.dtype)};
    dynamic = {false};
  }
}

}  // namespace

std::vector<int64_t> shape_slots(const OpCall& call, const OutputPlan& plan) {
  std::vector<int64_t> slots;
  for (const TensorView& v : call.views) {
    slots.insert(slots.end(), v.geometry.sizes.begin(), v.geometry.sizes.end());
    slots.insert(slots.end(), v.geometry.strides.begin(), v.geometry.strides.end());
    slots.push_back(v.geometry.offset);
  }
  for (const ir::Type& t : plan.result_types) slots.insert(slots.end(), t.shape.begin(), t.shape.end());
  return slots;
}

std::string size_pattern(const OpCall& call, const OutputPlan& plan) {
  std::vector<int64_t> seen;
  std::string k;
  auto label = [&](int64_t n) {
    if (n <= 1) return static_cast<char>(n);
    auto it = std::find(seen.begin(), seen.end(), n);
    if (it == seen.end()) {
      seen.push_back(n);
      it = seen.end() - 1;
    }
    return static_cast<char>(2 + (it - seen.begin()) % 250);
  };
  for (const TensorView& v : call.views)
    for (int64_t n : v.geometry.sizes) k += label(n);
  for (const ir::Type& t : plan.result_types)
    for (int64_t n : t.shape) k += label(n);
  return k;
}

std::vector<bool> varied_slots(const std::string& shape_free_key, const std::vector<int64_t>& slots,
                               size_t exact_values) {
  std::lock_guard<std::mutex> lock(g_mutex);
  if (g_not_paddable.count(shape_free_key)) return {};
  Record& r = g_records[shape_free_key];
  if (!r.shapes.empty() && r.shapes[0].size() != slots.size()) r = Record{};
  if (r.varied.empty()) {
    if (std::find(r.shapes.begin(), r.shapes.end(), slots) != r.shapes.end()) return {};
    if (r.shapes.size() < exact_values) {
      r.shapes.push_back(slots);
      return {};
    }
    // Every slot that took another value in one of the shapes seen becomes dynamic at once (a
    // size and the strides it scales vary together, even when calls of one step differ in
    // strides only).
    r.varied.assign(slots.size(), false);
  }
  bool any = false;
  for (size_t i = 0; i < slots.size(); ++i) {
    for (const std::vector<int64_t>& seen : r.shapes) r.varied[i] = r.varied[i] || seen[i] != slots[i];
    any |= r.varied[i];
  }
  if (!any) return {};
  return r.varied;
}

void forget_varied_slots() {
  std::lock_guard<std::mutex> lock(g_mutex);
  g_records.clear();
  g_not_paddable.clear();
}

// Padding that would cost more than it saves (small dimensions, such as kernel sizes, bucketed to
// the minimum in several dimensions at once) keeps the call exact: a view or result whose bucketed
// extent exceeds its real one both 16 times and by 4M elements.
bool too_much_padding(const OpCall& call, const OutputPlan& plan, const DynamicSpec& spec) {
  auto excessive = [](const std::vector<int64_t>& sizes, const std::vector<int>& symbols) {
    double real = 1, padded = 1;
    for (size_t d = 0; d < sizes.size(); ++d) {
      real *= static_cast<double>(sizes[d]);
      padded *= static_cast<double>(d < symbols.size() && symbols[d] >= 0 ? bucket(sizes[d]) : sizes[d]);
    }
    return padded > 16 * real && padded - real > 4.0 * (1 << 20);
  };
  for (size_t v = 0; v < call.views.size(); ++v)
    if (excessive(call.views[v].geometry.sizes, spec.views[v].sizes)) return true;
  for (size_t k = 0; k < plan.result_types.size(); ++k)
    if (excessive(plan.result_types[k].shape, spec.results[k])) return true;
  return false;
}

std::shared_ptr<const DynamicSpec> dynamic_spec(const OpCall& call, const OutputPlan& plan,
                                                const std::vector<bool>& varied) {
  auto spec = std::make_shared<DynamicSpec>();
  // A storage written whole without being read is no parameter: its sizes are no symbols.
  const std::vector<bool> read = storages_read(call);
  for (size_t s = 0; s < call.storages.size(); ++s) {
    const Storage* st = call.storages[s];
    std::vector<int> syms;
    if (st->padded && read[s])
      for (size_t d = 0; d < st->padded->sizes.size(); ++d)
        syms.push_back(size_symbol_or_constant(*spec, st->padded->dynamic[d], st->padded->sizes[d]));
    spec->storages.push_back(std::move(syms));
  }
  size_t slot = 0;
  auto next = [&] { return slot < varied.size() && varied[slot++]; };
  for (const TensorView& v : call.views) {
    DynamicSpec::View sv;
    for (int64_t n : v.geometry.sizes)
      sv.sizes.push_back(size_symbol_or_constant(*spec, next() && sizable(n), n));
    for (int64_t st : v.geometry.strides) sv.strides.push_back(symbol_or_constant(*spec, next(), st));
    sv.offset = symbol_or_constant(*spec, next(), v.geometry.offset);
    spec->views.push_back(std::move(sv));
  }
  for (size_t k = 0; k < plan.result_types.size(); ++k) {
    const ir::Type& t = plan.result_types[k];
    std::vector<int> syms;
    if (k < call.written_views.size()) {
      // A result written through a view is broadcast to it: its dynamic dimensions are the
      // view's (aligned at the end), its size-1 dimensions stay constant.
      const int v = call.written_views[k];
      const std::vector<int64_t>& sizes = call.views[v].geometry.sizes;
      const int64_t shift = static_cast<int64_t>(sizes.size()) - static_cast<int64_t>(t.shape.size());
      for (size_t d = 0; d < t.shape.size(); ++d) {
        next();
        const int64_t vd = static_cast<int64_t>(d) + shift;
        const bool same = vd >= 0 && sizes[vd] == t.shape[d];
        syms.push_back(same ? spec->views[v].sizes[vd] : -1);
      }
    } else {
      for (int64_t n : t.shape) syms.push_back(size_symbol_or_constant(*spec, next() && sizable(n), n));
    }
    spec->results.push_back(std::move(syms));
  }
  if (spec->values.empty() || too_much_padding(call, plan, *spec)) return nullptr;
  return spec;
}

OutputPlan bucketed_plan(const OutputPlan& plan, const DynamicSpec& spec, bool bound_new_outputs) {
  OutputPlan p = plan;
  for (size_t k = 0; k < p.result_types.size(); ++k)
    for (size_t d = 0; d < p.result_types[k].shape.size(); ++d)
      if (spec.results[k][d] >= 0) p.result_types[k].shape[d] = bucket(p.result_types[k].shape[d]);
  const size_t first_new = p.result_types.size() - p.new_outputs.size();
  for (size_t o = 0; o < p.new_outputs.size() && bound_new_outputs; ++o) {
    OutputPlan::NewOutput& out = p.new_outputs[o];
    if (out.undefined || !form_of(out.sizes, out.strides, spec.results[first_new + o])) continue;
    // The same dense order over the bounds (dynamic sizes are at least 2, so no dimension moves
    // among the size-1 ones).
    std::vector<int64_t> perm = lowering::dense_permutation(out.sizes, out.strides);
    out.sizes = p.result_types[first_new + o].shape;
    int64_t stride = 1;
    for (size_t i = perm.size(); i-- > 0;) {
      out.strides[perm[i]] = stride;
      stride *= std::max<int64_t>(out.sizes[perm[i]], 1);
    }
  }
  return p;
}

std::string bucketed_key(const OpCall& call, const OutputPlan& plan) {
  const DynamicSpec& spec = *call.dynamic;
  // The lowering's address first (as OpCall::key(), for persistent_key), then a byte no exact
  // key has there (exact keys continue with the 0/1 random flag).
  const std::string free = call.shape_free_key();
  std::string k = free.substr(0, sizeof call.lowering);
  k += '\xff';
  k.append(free, sizeof call.lowering, std::string::npos);
  const std::vector<bool> read = storages_read(call);
  for (size_t s = 0; s < call.storages.size(); ++s) {
    const Storage* st = call.storages[s];
    if (!read[s]) {  // written whole: its size is its written view's, a symbol or in the key
      put(k, -3);
      continue;
    }
    if (!st->padded) {
      put(k, storage_numel(call, static_cast<int>(s)));
      continue;
    }
    for (size_t d = 0; d < st->padded->bounds.size(); ++d) {
      put(k, st->padded->bounds[d]);
      put(k, st->padded->dynamic[d] ? -1 : st->padded->sizes[d]);
    }
  }
  for (size_t i = 0; i < call.views.size(); ++i) {
    const TensorView& v = call.views[i];
    const DynamicSpec::View& sv = spec.views[i];
    bool varies = sv.offset >= 0;
    for (size_t d = 0; d < v.geometry.sizes.size(); ++d) {
      put(k, sv.sizes[d] >= 0 ? -bucket(v.geometry.sizes[d]) : v.geometry.sizes[d]);
      put(k, sv.strides[d] >= 0 ? -1 : v.geometry.strides[d]);
      varies |= sv.sizes[d] >= 0 || sv.strides[d] >= 0;
    }
    put(k, sv.offset >= 0 ? -1 : v.geometry.offset);
    if ((varies || call.storages[v.storage]->padded) && read[v.storage]) {
      std::vector<int64_t> sizes;
      std::vector<bool> dynamic;
      storage_shape(call, v, sizes, dynamic);
      auto layout = lowering::plan_view(v.geometry, sizes, dynamic);
      std::vector<bool> symbolic;
      for (size_t d = 0; d < v.geometry.sizes.size(); ++d)
        symbolic.push_back(sv.sizes[d] >= 0 || sv.strides[d] >= 0);
      k += layout ? layout->key()
                  : "gather" + std::to_string(lowering::row_dims(v.geometry, symbolic, sizes, dynamic));
    }
  }
  for (size_t r = 0; r < plan.result_types.size(); ++r)
    for (size_t d = 0; d < plan.result_types[r].shape.size(); ++d)
      put(k,
          spec.results[r][d] >= 0 ? -bucket(plan.result_types[r].shape[d]) : plan.result_types[r].shape[d]);
  // Which sizes share a symbol (symbols are numbered in order of first use).
  for (const std::vector<int>& syms : spec.storages)
    for (int sym : syms) put(k, sym);
  for (const DynamicSpec::View& sv : spec.views)
    for (int sym : sv.sizes) put(k, sym);
  for (const std::vector<int>& syms : spec.results)
    for (int sym : syms) put(k, sym);
  const size_t first_new = plan.result_types.size() - plan.new_outputs.size();
  for (size_t o = 0; o < plan.new_outputs.size(); ++o)
    if (PaddedFormPtr f = output_form(plan, spec, o)) {
      std::vector<int64_t> perm =
          lowering::dense_permutation(plan.new_outputs[o].sizes, plan.new_outputs[o].strides);
      for (int64_t p : perm) put(k, p);
      put(k, static_cast<int64_t>(first_new + o));
    }
  return k;
}

PaddedFormPtr output_form(const OutputPlan& plan, const DynamicSpec& spec, size_t k) {
  const size_t first_new = plan.result_types.size() - plan.new_outputs.size();
  const OutputPlan::NewOutput& o = plan.new_outputs[k];
  if (o.undefined) return nullptr;
  return form_of(o.sizes, o.strides, spec.results[first_new + k]);
}

PaddedFormPtr written_form(const OpCall& call, const DynamicSpec* spec, int storage) {
  if (!spec) return nullptr;
  for (int v : call.written_views) {
    const TensorView& view = call.views[v];
    if (view.storage != storage) continue;
    if (lowering::covers_storage_densely(view.geometry, storage_numel(call, storage)))
      return form_of(view.geometry.sizes, view.geometry.strides, spec->views[v].sizes);
  }
  return call.storages[storage]->padded;
}

thread_local int64_t g_uploads_since_op = 0;

std::vector<bool> varied_upload_dims(const std::string& site, ir::DType dtype,
                                     const std::vector<int64_t>& sizes) {
  std::string key = "upload at " + site;
  append_bytes(key, g_uploads_since_op++);
  append_bytes(key, dtype);
  append_bytes(key, sizes.size());
  std::vector<bool> varied = varied_slots(key, sizes);
  varied.resize(sizes.size(), false);
  return varied;
}

void note_op_dispatched() { g_uploads_since_op = 0; }

PaddedFormPtr varied_form(const std::vector<int64_t>& sizes, const std::vector<int64_t>& strides,
                          const std::vector<bool>& varied) {
  std::vector<int> symbols(sizes.size(), -1);
  for (size_t d = 0; d < sizes.size() && d < varied.size(); ++d)
    if (varied[d] && sizable(sizes[d])) symbols[d] = 0;
  PaddedFormPtr form = form_of(sizes, strides, symbols);
  if (!form) return nullptr;
  int64_t real = 1;
  for (int64_t n : sizes) real *= n;
  if (form->capacity() > 16 * real && form->capacity() - real > (int64_t{4} << 20)) return nullptr;
  return form;
}

bool pad_uploads(const OpCall& call) {
  bool changed = false;
  for (const TensorView& v : call.views) {
    Storage* s = call.storages[v.storage];
    if (s->padded || !s->host_copy || s->dtype != v.dtype || !s->host_copy->unchanged()) continue;
    const HostCopy& host = *s->host_copy;
    std::vector<int64_t> strides(host.sizes.size(), 1);
    for (size_t d = host.sizes.size(); d-- > 1;)
      strides[d - 1] = strides[d] * std::max<int64_t>(host.sizes[d], 1);
    PaddedFormPtr form = varied_form(host.sizes, strides, host.varied);
    if (!form) continue;
    s->set_buffer(upload_padded(host.data, v.dtype, *form, s->device), v.dtype, form);
    changed = true;
  }
  return changed;
}

PaddedFormPtr marked_form(const PaddedForm* current, const std::vector<int64_t>& sizes, int64_t dim,
                          int64_t bound) {
  auto f = std::make_shared<PaddedForm>();
  f->sizes = sizes;
  f->bounds = current ? current->bounds : sizes;
  f->dynamic = current ? current->dynamic : std::vector<bool>(sizes.size(), false);
  f->dynamic[dim] = true;
  f->bounds[dim] = bound > 0 ? bound : bucket(sizes[dim]);
  return f;
}

void mark_not_paddable(const std::string& shape_free_key) {
  std::lock_guard<std::mutex> lock(g_mutex);
  g_not_paddable.insert(shape_free_key);
}

}  // namespace tpu::exec
