#include "lowering/indexing/padded_view.h"

#include <algorithm>
#include <numeric>

#include "lowering/core/hlo.h"

namespace tpu::lowering {

using ir::DType;
using ir::Type;
using ir::Value;

namespace {

std::vector<int64_t> row_major_strides(const std::vector<int64_t>& sizes) {
  std::vector<int64_t> strides(sizes.size(), 1);
  for (size_t k = sizes.size(); k-- > 1;) strides[k - 1] = strides[k] * std::max<int64_t>(sizes[k], 1);
  return strides;
}

int64_t product(const std::vector<int64_t>& v) {
  return std::accumulate(v.begin(), v.end(), int64_t{1}, std::multiplies<int64_t>());
}

// An i64 quantity of the program: a constant, or a runtime value.
struct Quantity {
  Value value;        // runtime, when valid
  int64_t known = 0;  // the constant otherwise
  bool is_known() const { return !value.valid(); }
  Value emit(ir::Builder& b) const { return value.valid() ? value : hlo::constant_int(b, DType::I64, known); }
};

// Folded where an operand alone decides (an offset of 0, a stride of 1), so that a start the
// program knows stays known: a dynamic slice known to start at 0 needs no padding to fit.
Quantity mul(ir::Builder& b, const Quantity& x, const Quantity& y) {
  if (x.is_known() && y.is_known()) return {{}, x.known * y.known};
  if ((x.is_known() && x.known == 0) || (y.is_known() && y.known == 0)) return {{}, 0};
  if (x.is_known() && x.known == 1) return y;
  if (y.is_known() && y.known == 1) return x;
  return {hlo::mul(b, x.emit(b), y.emit(b)), 0};
}
Quantity divide(ir::Builder& b, const Quantity& x, const Quantity& y) {
  if (x.is_known() && y.is_known()) return {{}, x.known / y.known};
  if (x.is_known() && x.known == 0) return {{}, 0};
  if (y.is_known() && y.known == 1) return x;
  return {hlo::div(b, x.emit(b), y.emit(b)), 0};
}
Quantity remainder(ir::Builder& b, const Quantity& x, const Quantity& y) {
  if (x.is_known() && y.is_known()) return {{}, x.known % y.known};
  if ((x.is_known() && x.known == 0) || (y.is_known() && y.known == 1)) return {{}, 0};
  return {hlo::rem(b, x.emit(b), y.emit(b)), 0};
}

Quantity quantity(const Value& runtime, int64_t known) {
  return runtime.valid() ? Quantity{runtime, 0} : Quantity{{}, known};
}

// The storage's array reshaped to the plan's refined dimensions, with their real sizes and the
// coordinates where the view starts.
struct Refined {
  Value data;
  std::vector<int64_t> bounds;
  std::vector<Quantity> sizes, starts;
};

Refined refine(ir::Builder& b, const StorageValue& storage, const ViewPlan& plan, const DynamicView& view) {
  Refined r;
  const size_t n = plan.sizes.size();
  for (size_t k = 0; k < n; ++k) {
    const int s = plan.from[k];
    if (plan.dynamic[k]) {
      r.bounds.push_back(storage.data.dim(s));
      r.sizes.push_back({storage.dims[s], 0});
    } else {
      r.bounds.push_back(plan.sizes[k]);
      r.sizes.push_back({{}, plan.sizes[k]});
    }
  }
  r.data = hlo::reshape(b, storage.data, r.bounds);
  // start_k = (offset / stride_k) % size_k over the real row-major strides.
  std::vector<Quantity> strides(n, Quantity{{}, 1});
  for (size_t k = n; k-- > 1;) strides[k - 1] = mul(b, strides[k], r.sizes[k]);
  const Quantity offset = quantity(view.offset, view.geometry.offset);
  for (size_t k = 0; k < n; ++k) r.starts.push_back(remainder(b, divide(b, offset, strides[k]), r.sizes[k]));
  return r;
}

// Per refined dimension, how much of it the view's box spans at the bounds.
std::vector<int64_t> box_lengths(const ViewPlan& plan, const DynamicView& view) {
  std::vector<int64_t> lengths(plan.sizes.size(), 1);
  for (size_t j = 0; j < plan.runs.size(); ++j) {
    const ViewPlan::Run& run = plan.runs[j];
    if (run.first < 0) continue;
    int64_t inner = 1;
    for (int k = run.first + 1; k <= run.last; ++k) {
      lengths[k] = plan.sizes[k];
      inner *= plan.sizes[k];
    }
    lengths[run.first] =
        run.first == run.last ? (view.bounds[j] - 1) * run.step + 1 : (view.bounds[j] + inner - 1) / inner;
  }
  return lengths;
}

// `r.data` padded at the end of each dimension where the box may run past the bounds in some
// call the program serves, so that a dynamic slice never clamps its start. A box at the view's
// real lengths lies inside the storage; only a length at a bucket (a runtime view size) may run
// past, unless the view spans that whole dynamic dimension: then it starts at 0.
Value padded_for_box(ir::Builder& b, Refined& r, const ViewPlan& plan, const DynamicView& view,
                     const StorageValue& storage, const std::vector<int64_t>& lengths) {
  std::vector<int64_t> high(lengths.size(), 0);
  bool any = false;
  for (size_t j = 0; j < plan.runs.size(); ++j) {
    const ViewPlan::Run& run = plan.runs[j];
    const int k = run.first;
    if (k < 0 || j >= view.sizes.size() || !view.sizes[j].valid()) continue;
    const size_t s = static_cast<size_t>(plan.from[k]);
    const bool whole = run.first == run.last && run.step == 1 && plan.dynamic[k] && s < storage.dims.size() &&
                       storage.dims[s].id == view.sizes[j].id;
    if (whole) {
      r.starts[k] = Quantity{{}, 0};
    } else if (!(r.starts[k].is_known() && r.starts[k].known + lengths[k] <= r.bounds[k])) {
      high[k] = lengths[k];
      any = true;
    }
  }
  if (!any) return r.data;
  return hlo::pad(b, r.data, hlo::constant(b, r.data.dtype(), 0), std::vector<int64_t>(lengths.size(), 0),
                  high);
}

std::vector<Value> emitted(ir::Builder& b, const std::vector<Quantity>& qs) {
  std::vector<Value> out;
  for (const Quantity& q : qs) out.push_back(q.emit(b));
  return out;
}

// The runs in refined order (the view dimensions they belong to).
std::vector<int> runs_in_storage_order(const ViewPlan& plan) {
  std::vector<int> order;
  for (size_t j = 0; j < plan.runs.size(); ++j)
    if (plan.runs[j].first >= 0) order.push_back(static_cast<int>(j));
  std::sort(order.begin(), order.end(),
            [&](int a, int c) { return plan.runs[a].first < plan.runs[c].first; });
  return order;
}

// Slices or pads dimension `d` of `v` to `length` (its leading elements are kept).
Value rebound(ir::Builder& b, const Value& v, int d, int64_t length) {
  if (v.dim(d) == length) return v;
  if (v.dim(d) > length) return hlo::slice_dim(b, v, d, 0, length);
  std::vector<int64_t> low(v.rank(), 0), high(v.rank(), 0);
  high[d] = length - v.dim(d);
  return hlo::pad(b, v, hlo::constant(b, v.dtype(), 0), low, high);
}

// Flat element index of every element of the view, at its bounds (i64).
Value element_index(ir::Builder& b, const DynamicView& view) {
  const Type t{DType::I64, view.bounds};
  Value idx = hlo::broadcast_in_dim(b, quantity(view.offset, view.geometry.offset).emit(b), view.bounds, {});
  for (size_t d = 0; d < view.bounds.size(); ++d) {
    const bool runtime = d < view.strides.size() && view.strides[d].valid();
    if (view.bounds[d] <= 1 || (!runtime && view.geometry.strides[d] == 0)) continue;
    Value stride = runtime ? view.strides[d] : hlo::constant_int(b, DType::I64, view.geometry.strides[d]);
    idx = hlo::add(b, idx,
                   hlo::mul(b, hlo::iota(b, t, static_cast<int64_t>(d)),
                            hlo::broadcast_in_dim(b, stride, view.bounds, {})));
  }
  return idx;
}

// Gather/scatter index vectors (last dimension) of the row-major flat indices `idx` over an array
// of real `sizes` (its leading dimensions, when rows follow); where `keep` is false, the
// coordinates are `data`'s extents: out of range.
Value coordinates(ir::Builder& b, const std::vector<Quantity>& sizes, const Value& data, const Value& idx,
                  const Value& keep) {
  const int rank = static_cast<int>(sizes.size());
  std::vector<int64_t> with_vector = idx.shape();
  with_vector.push_back(1);
  std::vector<Quantity> strides(rank, Quantity{{}, 1});
  for (int k = rank; k-- > 1;) strides[k - 1] = mul(b, strides[k], sizes[k]);
  std::vector<Value> coords;
  for (int k = 0; k < rank; ++k) {
    Value c = idx;
    if (rank > 1) {
      Value s = hlo::broadcast_in_dim(b, strides[k].emit(b), idx.shape(), {});
      Value n = hlo::broadcast_in_dim(b, sizes[k].emit(b), idx.shape(), {});
      c = hlo::rem(b, hlo::div(b, idx, s), n);
    }
    if (keep.valid()) c = hlo::select(b, keep, c, hlo::full_int(b, c.type, data.dim(k)));
    coords.push_back(hlo::reshape(b, c, with_vector));
  }
  return coords.size() == 1 ? coords[0] : hlo::concatenate(b, coords, static_cast<int64_t>(idx.rank()));
}

// Coordinates in the storage's array of flat element indices `idx` (out of range where `keep`
// is false).
Value storage_coordinates(ir::Builder& b, const StorageValue& storage, const Value& idx, const Value& keep) {
  std::vector<Quantity> sizes;
  if (!storage.padded()) {
    sizes.push_back(Quantity{{}, storage.data.dim(0)});
  } else {
    for (int k = 0; k < storage.data.rank(); ++k)
      sizes.push_back(quantity(storage.dims[k], storage.data.dim(k)));
  }
  return coordinates(b, sizes, storage.data, idx, keep);
}

hlo::GatherDims point_gather(int index_rank, int operand_rank) {
  hlo::GatherDims d;
  for (int k = 0; k < operand_rank; ++k) {
    d.collapsed_slice_dims.push_back(k);
    d.start_index_map.push_back(k);
  }
  d.index_vector_dim = index_rank;
  d.slice_sizes.assign(operand_rank, 1);
  return d;
}

hlo::ScatterDims point_scatter(int index_rank, int operand_rank) {
  hlo::ScatterDims d;
  for (int k = 0; k < operand_rank; ++k) {
    d.inserted_window_dims.push_back(k);
    d.scatter_dims_to_operand_dims.push_back(k);
  }
  d.index_vector_dim = index_rank;
  return d;
}

// Gather/scatter of rows: the storage's array with its row dimensions last (a flat storage split
// as [n / row] + row shape), the coordinates of each row of the view's leading dimensions in its
// leading dimensions (out of range where `keep` is false), and the dimension numbers.
struct RowAccess {
  Value data;
  Value coords;
  int lead = 0;  // leading (indexed) dimensions of `data`
  int rows = 0;  // trailing view dimensions in a row
};

RowAccess row_access(ir::Builder& b, const StorageValue& storage, const DynamicView& view, int rows) {
  RowAccess a;
  a.rows = rows;
  const size_t rank = view.bounds.size(), lead_view = rank - static_cast<size_t>(rows);
  const std::vector<int64_t> row_shape(view.geometry.sizes.begin() + static_cast<long>(lead_view),
                                       view.geometry.sizes.end());
  const int64_t row = product(row_shape);
  std::vector<Quantity> lead_sizes;
  if (!storage.padded()) {
    std::vector<int64_t> shape = {storage.data.dim(0) / row};
    shape.insert(shape.end(), row_shape.begin(), row_shape.end());
    a.data = hlo::reshape(b, storage.data, shape);
    lead_sizes.push_back(Quantity{{}, storage.sizes[0] / row});
  } else {
    a.data = storage.data;
    for (int k = 0; k + rows < storage.data.rank(); ++k)
      lead_sizes.push_back(
          quantity(k < static_cast<int>(storage.dims.size()) ? storage.dims[k] : Value{}, storage.sizes[k]));
  }
  a.lead = static_cast<int>(lead_sizes.size());
  DynamicView lv;
  lv.geometry.sizes.assign(view.geometry.sizes.begin(),
                           view.geometry.sizes.begin() + static_cast<long>(lead_view));
  lv.geometry.strides.assign(view.geometry.strides.begin(),
                             view.geometry.strides.begin() + static_cast<long>(lead_view));
  lv.geometry.offset = view.geometry.offset;
  lv.bounds.assign(view.bounds.begin(), view.bounds.begin() + static_cast<long>(lead_view));
  for (size_t d = 0; d < lead_view; ++d) {
    lv.sizes.push_back(d < view.sizes.size() ? view.sizes[d] : Value{});
    lv.strides.push_back(d < view.strides.size() ? view.strides[d] : Value{});
  }
  lv.offset = view.offset;
  // Element index -> row index -> coordinates in the leading dimensions.
  Value idx = hlo::div(b, element_index(b, lv), hlo::full_int(b, Type{DType::I64, lv.bounds}, row));
  a.coords = coordinates(b, lead_sizes, a.data, idx, valid_mask(b, lv.bounds, lv.sizes));
  return a;
}

Value read_rows(ir::Builder& b, const StorageValue& storage, const DynamicView& view, int rows) {
  RowAccess a = row_access(b, storage, view, rows);
  const int64_t lead_view = static_cast<int64_t>(view.bounds.size()) - rows;
  hlo::GatherDims d;
  for (int k = 0; k < rows; ++k) d.offset_dims.push_back(lead_view + k);
  for (int k = 0; k < a.lead; ++k) {
    d.collapsed_slice_dims.push_back(k);
    d.start_index_map.push_back(k);
  }
  d.index_vector_dim = lead_view;
  d.slice_sizes.assign(a.lead, 1);
  for (int k = a.lead; k < a.data.rank(); ++k) d.slice_sizes.push_back(a.data.dim(k));
  return hlo::gather(b, a.data, a.coords, d);
}

StorageValue write_rows(ir::Builder& b, const StorageValue& storage, const Value& value,
                        const DynamicView& view, int rows) {
  RowAccess a = row_access(b, storage, view, rows);
  const int64_t lead_view = static_cast<int64_t>(view.bounds.size()) - rows;
  hlo::ScatterDims d;
  for (int k = 0; k < rows; ++k) d.update_window_dims.push_back(lead_view + k);
  for (int k = 0; k < a.lead; ++k) {
    d.inserted_window_dims.push_back(k);
    d.scatter_dims_to_operand_dims.push_back(k);
  }
  d.index_vector_dim = lead_view;
  StorageValue out = storage;
  out.data =
      hlo::reshape(b, hlo::scatter(b, a.data, a.coords, value, d, hlo::kReplace), storage.data.shape());
  return out;
}

}  // namespace

int row_dims(const ViewGeometry& view, const std::vector<bool>& varies,
             const std::vector<int64_t>& storage_sizes, const std::vector<bool>& storage_dynamic) {
  const int rank = static_cast<int>(view.sizes.size());
  const bool flat = storage_sizes.size() == 1 && !storage_dynamic[0];
  int rows = 0, k = static_cast<int>(storage_sizes.size()) - 1;
  int64_t row = 1;
  for (int d = rank - 1; d > 0; --d, --k) {
    const int64_t n = view.sizes[d];
    if (view.strides[d] != row || n <= 1 || (d < static_cast<int>(varies.size()) && varies[d])) break;
    if (!flat && (k <= 0 || storage_dynamic[k] || storage_sizes[k] != n)) break;
    row *= n;
    ++rows;
  }
  if (rows == 0 || row < 2 || (flat && storage_sizes[0] % row != 0) || view.offset % row != 0) return 0;
  for (int d = 0; d < rank - rows; ++d)
    if (view.sizes[d] > 1 && view.strides[d] % row != 0) return 0;
  return rows;
}

std::vector<bool> DynamicView::varying_dims() const {
  std::vector<bool> out(bounds.size(), false);
  for (size_t d = 0; d < out.size(); ++d)
    out[d] = (d < sizes.size() && sizes[d].valid()) || (d < strides.size() && strides[d].valid());
  return out;
}

bool DynamicView::varies() const {
  return any_dynamic(sizes) || offset.valid() ||
         std::any_of(strides.begin(), strides.end(), [](const Value& v) { return v.valid(); });
}

std::string ViewPlan::key() const {
  std::string k;
  auto put = [&](int64_t v) { k.append(reinterpret_cast<const char*>(&v), sizeof v); };
  put(static_cast<int64_t>(sizes.size()));
  for (size_t i = 0; i < sizes.size(); ++i) {
    put(dynamic[i] ? -1 : sizes[i]);
    put(from[i]);
  }
  for (const Run& r : runs) {
    put(r.first);
    put(r.last);
    put(r.step);
  }
  return k;
}

std::optional<ViewPlan> plan_view(const ViewGeometry& view, const std::vector<int64_t>& storage_sizes,
                                  const std::vector<bool>& storage_dynamic) {
  const std::vector<int64_t>& S = storage_sizes;
  const int64_t numel = product(S);
  if (numel == 0 || view.offset >= numel) return std::nullopt;
  const std::vector<int64_t> rs = row_major_strides(S);
  ViewPlan p;
  // Split each static dimension where a view stride falls strictly inside it.
  for (size_t k = 0; k < S.size(); ++k) {
    std::vector<int64_t> points;
    if (!storage_dynamic[k] && S[k] > 1)
      for (size_t j = 0; j < view.sizes.size(); ++j) {
        const int64_t st = view.strides[j];
        if (view.sizes[j] > 1 && st > rs[k] && st < rs[k] * S[k] && st % rs[k] == 0) points.push_back(st);
      }
    std::sort(points.rbegin(), points.rend());
    points.erase(std::unique(points.begin(), points.end()), points.end());
    int64_t outer = rs[k] * S[k];
    for (int64_t point : points) {
      if (outer % point != 0) return std::nullopt;
      p.sizes.push_back(outer / point);
      p.from.push_back(static_cast<int>(k));
      p.dynamic.push_back(false);
      outer = point;
    }
    p.sizes.push_back(outer / rs[k]);
    p.from.push_back(static_cast<int>(k));
    p.dynamic.push_back(storage_dynamic[k]);
  }
  const size_t n = p.sizes.size();
  const std::vector<int64_t> rr = row_major_strides(p.sizes);
  std::vector<int64_t> start(n);
  for (size_t k = 0; k < n; ++k) start[k] = (view.offset / rr[k]) % p.sizes[k];
  std::vector<bool> used(n, false);
  p.runs.resize(view.sizes.size());
  for (size_t j = 0; j < view.sizes.size(); ++j) {
    const int64_t v = view.sizes[j], st = view.strides[j];
    if (v <= 1 || st == 0) continue;
    int k1 = -1;
    for (size_t k = 0; k < n && k1 < 0; ++k)
      if (p.sizes[k] > 1 && st % rr[k] == 0 && st / rr[k] < p.sizes[k]) k1 = static_cast<int>(k);
    if (k1 < 0) return std::nullopt;
    ViewPlan::Run run{k1, k1, st / rr[k1]};
    if (run.step > 1 || v <= p.sizes[k1] - start[k1]) {
      if (start[k1] + (v - 1) * run.step >= p.sizes[k1]) return std::nullopt;
    } else {
      // The view dimension covers whole inner dimensions: extend outward.
      int64_t inner = 1;
      int k0 = k1;
      while (true) {
        if (start[k0] != 0 || p.dynamic[k0]) return std::nullopt;
        inner *= p.sizes[k0];
        if (--k0 < 0 || v % inner != 0) return std::nullopt;
        if (v / inner <= p.sizes[k0] - start[k0]) break;
      }
      run.first = k0;
    }
    for (int k = run.first; k <= run.last; ++k) {
      if (used[k]) return std::nullopt;
      used[k] = true;
    }
    p.runs[j] = run;
  }
  return p;
}

Value read_dynamic(ir::Builder& b, const StorageValue& storage, const DynamicView& view) {
  const DType dtype = storage.data.dtype();
  if (product(view.bounds) == 0) return hlo::full(b, Type{dtype, view.bounds}, 0);
  std::vector<bool> dynamic;
  for (size_t k = 0; k < storage.sizes.size(); ++k)
    dynamic.push_back(k < storage.dims.size() && storage.dims[k].valid());
  std::optional<ViewPlan> plan = plan_view(view.geometry, storage.sizes, dynamic);
  if (!plan) {
    if (const int rows = row_dims(view.geometry, view.varying_dims(), storage.sizes, dynamic))
      return read_rows(b, storage, view, rows);
    Value idx = element_index(b, view);
    Value coords = storage_coordinates(b, storage, idx, {});
    return hlo::gather(b, storage.data, coords, point_gather(idx.rank(), storage.data.rank()));
  }
  Refined r = refine(b, storage, *plan, view);
  const std::vector<int64_t> lengths = box_lengths(*plan, view);
  Value base = padded_for_box(b, r, *plan, view, storage, lengths);
  Value slab = hlo::dynamic_slice(b, base, emitted(b, r.starts), lengths);
  // Steps, then one dimension per run (in storage order), then the view's order and shape.
  const std::vector<int> order = runs_in_storage_order(*plan);
  std::vector<int64_t> merged;
  for (int j : order) {
    const ViewPlan::Run& run = plan->runs[j];
    if (run.step > 1) slab = hlo::slice_dim(b, slab, run.first, 0, lengths[run.first], run.step);
    int64_t m = 1;
    for (int k = run.first; k <= run.last; ++k) m *= slab.dim(k);
    merged.push_back(m);
  }
  Value v = hlo::reshape(b, slab, merged);
  std::vector<int64_t> perm(order.size());
  std::iota(perm.begin(), perm.end(), 0);
  std::sort(perm.begin(), perm.end(), [&](int64_t a, int64_t c) { return order[a] < order[c]; });
  v = hlo::transpose(b, v, perm);
  std::vector<int64_t> target;
  for (size_t i = 0; i < perm.size(); ++i) {
    const int j = order[perm[i]];
    v = rebound(b, v, static_cast<int>(i), view.bounds[j]);
    target.push_back(j);
  }
  return hlo::broadcast_in_dim(b, v, view.bounds, target);
}

StorageValue write_dynamic(ir::Builder& b, const StorageValue& storage, const Value& value,
                           const DynamicView& view) {
  if (product(view.bounds) == 0) return storage;
  std::vector<bool> dynamic;
  for (size_t k = 0; k < storage.sizes.size(); ++k)
    dynamic.push_back(k < storage.dims.size() && storage.dims[k].valid());
  std::optional<ViewPlan> plan = plan_view(view.geometry, storage.sizes, dynamic);
  const bool stepped = plan && std::any_of(plan->runs.begin(), plan->runs.end(),
                                           [](const ViewPlan::Run& r) { return r.step > 1; });
  const Value keep = valid_mask(b, view.bounds, view.sizes);
  StorageValue out = storage;
  if (!plan)
    if (const int rows = row_dims(view.geometry, view.varying_dims(), storage.sizes, dynamic))
      return write_rows(b, storage, value, view, rows);
  if (!plan || stepped) {
    Value idx = element_index(b, view);
    Value coords = storage_coordinates(b, storage, idx, keep);
    out.data = hlo::scatter(b, storage.data, coords, value, point_scatter(idx.rank(), storage.data.rank()),
                            hlo::kReplace);
    return out;
  }
  Refined r = refine(b, storage, *plan, view);
  const std::vector<int64_t> lengths = box_lengths(*plan, view);
  Value base = padded_for_box(b, r, *plan, view, storage, lengths);
  const std::vector<Value> starts = emitted(b, r.starts);
  Value old = hlo::dynamic_slice(b, base, starts, lengths);
  // The view's value and mask laid out as the slab: runs in storage order, each split back into
  // its refined dimensions; size-1 and fixed dimensions have length 1.
  const std::vector<int> order = runs_in_storage_order(*plan);
  std::vector<int64_t> keep_dims;
  for (size_t j = 0; j < view.bounds.size(); ++j)
    if (plan->runs[j].first >= 0) keep_dims.push_back(static_cast<int64_t>(j));
  auto to_slab = [&](Value v) {
    // A dimension of size 1 in this call that is dynamic still has its bound: its first element.
    for (size_t j = 0; j < view.bounds.size(); ++j)
      if (plan->runs[j].first < 0 && v.dim(static_cast<int>(j)) > 1)
        v = hlo::slice_dim(b, v, static_cast<int>(j), 0, 1);
    std::vector<int64_t> squeezed;
    for (int64_t j : keep_dims) squeezed.push_back(v.dim(static_cast<int>(j)));
    v = hlo::reshape(b, v, squeezed);
    std::vector<int64_t> perm;
    for (int j : order) perm.push_back(std::find(keep_dims.begin(), keep_dims.end(), j) - keep_dims.begin());
    v = hlo::transpose(b, v, perm);
    for (size_t i = 0; i < order.size(); ++i) {
      const ViewPlan::Run& run = plan->runs[order[i]];
      int64_t m = 1;
      for (int k = run.first; k <= run.last; ++k) m *= lengths[k];
      v = rebound(b, v, static_cast<int>(i), m);
    }
    return hlo::reshape(b, v, lengths);
  };
  Value fresh = to_slab(value);
  Value inside = to_slab(keep);
  Value slab = hlo::select(b, inside, fresh, old);
  Value updated = hlo::dynamic_update_slice(b, base, slab, starts);
  if (updated.shape() != r.bounds)
    updated = hlo::slice(b, updated, std::vector<int64_t>(r.bounds.size(), 0), r.bounds);
  out.data = hlo::reshape(b, updated, storage.data.shape());
  return out;
}

StorageValue result_storage(ir::Builder& b, const Value& value, const Dims& dims,
                            const std::vector<int64_t>& sizes, const std::vector<int64_t>& strides) {
  std::vector<int64_t> perm = dense_permutation(sizes, strides);
  if (perm.empty()) {
    perm.resize(sizes.size());
    std::iota(perm.begin(), perm.end(), 0);
  }
  Value v = hlo::transpose(b, value, perm);
  StorageValue s;
  if (!any_dynamic(dims)) {
    s.data = hlo::reshape(b, v, {value.type.numel()});
    s.sizes = {product(sizes)};
    return s;
  }
  s.data = v;
  for (int64_t d : perm) {
    s.dims.push_back(d < static_cast<int64_t>(dims.size()) ? dims[d] : Value{});
    s.sizes.push_back(sizes[d]);
  }
  return s;
}

}  // namespace tpu::lowering
