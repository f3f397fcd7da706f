#include "lowering/indexing/storage_view.h"

#include <algorithm>
#include <numeric>

#include "lowering/core/hlo.h"

namespace tpu::lowering {

using ir::DType;
using ir::Type;
using ir::Value;

namespace {

int64_t numel_of(const std::vector<int64_t>& sizes) {
  int64_t n = 1;
  for (int64_t s : sizes) n *= s;
  return n;
}

// The view as nested blocks of the flat storage: the dimensions that really stride
// (size > 1, stride > 0) sorted by decreasing stride, when each stride divides the next larger
// one and the blocks do not overlap. Then the view is a slab [offset, offset + n0*s0) reshaped to
// [n0, s0/s1, ..., s_{m-1}] and sliced to [n0, n1, ..., n_{m-1}, 1].
struct BlockLayout {
  bool ok = false;
  std::vector<int64_t> dims;   // original dimension of each block level, outermost first
  std::vector<int64_t> block;  // shape of the reshaped slab
  std::vector<int64_t> keep;   // extent kept of each block level (n_k, then 1)
  int64_t span = 0;            // slab length
  bool broadcast = false;      // some dimension has stride 0 and size > 1
};

BlockLayout block_layout(const ViewGeometry& v) {
  BlockLayout l;
  for (size_t d = 0; d < v.sizes.size(); ++d) {
    if (v.sizes[d] <= 1) continue;
    if (v.strides[d] == 0) {
      l.broadcast = true;
      continue;
    }
    if (v.strides[d] < 0) return l;
    l.dims.push_back(static_cast<int64_t>(d));
  }
  std::stable_sort(l.dims.begin(), l.dims.end(),
                   [&](int64_t a, int64_t b) { return v.strides[a] > v.strides[b]; });
  size_t m = l.dims.size();
  for (size_t k = 0; k + 1 < m; ++k) {
    int64_t s = v.strides[l.dims[k]], s_next = v.strides[l.dims[k + 1]];
    if (s % s_next != 0 || v.sizes[l.dims[k + 1]] * s_next > s) return l;
  }
  if (m == 0) {
    l.block = {1};
    l.keep = {1};
    l.span = 1;
  } else {
    l.span = v.sizes[l.dims[0]] * v.strides[l.dims[0]];
    l.block.push_back(v.sizes[l.dims[0]]);
    for (size_t k = 0; k + 1 < m; ++k) l.block.push_back(v.strides[l.dims[k]] / v.strides[l.dims[k + 1]]);
    l.block.push_back(v.strides[l.dims[m - 1]]);
    for (size_t k = 0; k < m; ++k) l.keep.push_back(v.sizes[l.dims[k]]);
    l.keep.push_back(1);
  }
  l.ok = true;
  return l;
}

// Storage padded with zeros so that [offset, offset + span) is in range.
Value padded(ir::Builder& b, const Value& storage, int64_t end) {
  int64_t n = storage.dim(0);
  if (end <= n) return storage;
  return hlo::pad(b, storage, hlo::constant(b, storage.dtype(), 0), {0}, {end - n});
}

// Flat element index of every element of the view (i64, view shape).
Value element_indices(ir::Builder& b, const ViewGeometry& v) {
  Type t{DType::I64, v.sizes};
  Value idx = hlo::full(b, t, static_cast<double>(v.offset));
  for (size_t d = 0; d < v.sizes.size(); ++d) {
    if (v.sizes[d] <= 1 || v.strides[d] == 0) continue;
    Value term = hlo::mul(b, hlo::iota(b, t, static_cast<int64_t>(d)),
                          hlo::full(b, t, static_cast<double>(v.strides[d])));
    idx = hlo::add(b, idx, term);
  }
  return idx;
}

// Element-by-element access to a flat storage: indices [..., 1] name one element each.
hlo::GatherDims flat_gather_dims(int rank) {
  hlo::GatherDims d;
  d.collapsed_slice_dims = {0};
  d.start_index_map = {0};
  d.index_vector_dim = rank;
  d.slice_sizes = {1};
  return d;
}
hlo::ScatterDims flat_scatter_dims(int rank) {
  hlo::ScatterDims d;
  d.inserted_window_dims = {0};
  d.scatter_dims_to_operand_dims = {0};
  d.index_vector_dim = rank;
  return d;
}

}  // namespace

bool is_contiguous(const ViewGeometry& v) {
  int64_t expected = 1;
  for (size_t i = v.sizes.size(); i-- > 0;) {
    if (v.sizes[i] != 1 && v.strides[i] != expected) return false;
    expected *= v.sizes[i];
  }
  return true;
}

bool covers_storage(const ViewGeometry& v, int64_t storage_numel) {
  return v.offset == 0 && numel_of(v.sizes) == storage_numel && is_contiguous(v);
}

bool covers_storage_densely(const ViewGeometry& v, int64_t storage_numel) {
  return covers_storage(v, storage_numel) || (v.offset == 0 && numel_of(v.sizes) == storage_numel &&
                                              !dense_permutation(v.sizes, v.strides).empty());
}

Value read_view(ir::Builder& b, const Value& storage, const ViewGeometry& v) {
  DType dtype = storage.dtype();
  int64_t n = numel_of(v.sizes);
  if (n == 0) return hlo::full(b, Type{dtype, v.sizes}, 0);
  if (covers_storage(v, storage.dim(0))) return hlo::reshape(b, storage, v.sizes);
  BlockLayout l = block_layout(v);
  if (l.ok) {
    Value slab = hlo::slice(b, padded(b, storage, v.offset + l.span), {v.offset}, {v.offset + l.span});
    Value blocks = hlo::reshape(b, slab, l.block);
    std::vector<int64_t> zeros(l.block.size(), 0);
    Value kept = hlo::slice(b, blocks, zeros, l.keep);
    std::vector<int64_t> sorted_sizes(l.keep.begin(), l.keep.end() - 1);
    kept = hlo::reshape(b, kept, sorted_sizes);
    // Back to the view's dimension order, then broadcast into the full shape.
    std::vector<int64_t> order(l.dims.size());
    std::iota(order.begin(), order.end(), 0);
    std::sort(order.begin(), order.end(), [&](int64_t a, int64_t c) { return l.dims[a] < l.dims[c]; });
    kept = hlo::transpose(b, kept, order);
    std::vector<int64_t> target_dims;
    for (int64_t k : order) target_dims.push_back(l.dims[k]);
    return hlo::broadcast_in_dim(b, kept, v.sizes, target_dims);
  }
  Value idx = hlo::reshape(b, element_indices(b, v), [&] {
    auto s = v.sizes;
    s.push_back(1);
    return s;
  }());
  return hlo::gather(b, storage, idx, flat_gather_dims(static_cast<int>(v.sizes.size())));
}

Value write_view(ir::Builder& b, const Value& storage, const Value& value, const ViewGeometry& v) {
  int64_t total = storage.dim(0);
  if (numel_of(v.sizes) == 0) return storage;
  if (covers_storage(v, total)) return hlo::reshape(b, value, {total});
  BlockLayout l = block_layout(v);
  if (l.ok && !l.broadcast) {
    // Drop size-1 dims, order dims as the blocks are nested, add the trailing unit level.
    std::vector<int64_t> compact_dims, compact_shape;
    for (size_t d = 0; d < v.sizes.size(); ++d)
      if (v.sizes[d] > 1) {
        compact_dims.push_back(static_cast<int64_t>(d));
        compact_shape.push_back(v.sizes[d]);
      }
    Value compact = hlo::reshape(b, value, compact_shape);
    std::vector<int64_t> perm;
    for (int64_t d : l.dims)
      perm.push_back(std::find(compact_dims.begin(), compact_dims.end(), d) - compact_dims.begin());
    Value update = hlo::reshape(b, hlo::transpose(b, compact, perm), l.keep);
    int64_t end = v.offset + l.span;
    Value base = padded(b, storage, end);
    Value blocks = hlo::reshape(b, hlo::slice(b, base, {v.offset}, {end}), l.block);
    Value zero = hlo::constant(b, DType::I64, 0);
    std::vector<Value> starts(l.block.size(), zero);
    Value slab = hlo::reshape(b, hlo::dynamic_update_slice(b, blocks, update, starts), {l.span});
    Value result = hlo::dynamic_update_slice(b, base, slab, {hlo::constant(b, DType::I64, v.offset)});
    return hlo::slice(b, result, {0}, {total});
  }
  int rank = static_cast<int>(v.sizes.size());
  auto sizes1 = v.sizes;
  sizes1.push_back(1);
  Value idx = hlo::reshape(b, element_indices(b, v), sizes1);
  return hlo::scatter(b, storage, idx, value, flat_scatter_dims(rank), hlo::kReplace);
}

std::vector<int64_t> dense_permutation(const std::vector<int64_t>& sizes,
                                       const std::vector<int64_t>& strides) {
  // Size-1 dims can carry any stride and do not affect the layout: they go last.
  std::vector<int64_t> perm, unit;
  for (size_t d = 0; d < sizes.size(); ++d) (sizes[d] == 1 ? unit : perm).push_back(d);
  std::stable_sort(perm.begin(), perm.end(), [&](int64_t a, int64_t c) { return strides[a] > strides[c]; });
  int64_t expected = 1;
  for (size_t k = perm.size(); k-- > 0;) {
    if (strides[perm[k]] != expected) return {};
    expected *= sizes[perm[k]];
  }
  perm.insert(perm.end(), unit.begin(), unit.end());
  return perm;
}

Value reinterpret(ir::Builder& b, const Value& storage, DType dtype) {
  // i1 has no bit layout in StableHLO; PyTorch stores bools as bytes 0/1.
  if (storage.dtype() == DType::Bool) return reinterpret(b, hlo::convert(b, storage, DType::U8), dtype);
  if (dtype == DType::Bool) return hlo::convert(b, reinterpret(b, storage, DType::U8), DType::Bool);
  if (storage.dtype() == dtype) return storage;
  // XLA's bitcast_convert refuses complex types; a complex element is its (re, im) pair of the
  // real type, so complex storages go through their interleaved real parts.
  if (ir::is_complex(storage.dtype())) {
    const ir::Shape part{storage.dim(0), 1};
    Value re = hlo::reshape(b, hlo::real(b, storage), part);
    Value im = hlo::reshape(b, hlo::imag(b, storage), part);
    Value pairs = hlo::reshape(b, hlo::concatenate(b, {re, im}, 1), {2 * storage.dim(0)});
    return reinterpret(b, pairs, dtype);
  }
  if (ir::is_complex(dtype)) {
    Value parts = reinterpret(b, storage, ir::real_type(dtype));
    const int64_t m = parts.dim(0) / 2;
    // A trailing half element is not visible through the complex dtype.
    Value pairs = hlo::reshape(b, hlo::slice(b, parts, {0}, {2 * m}), {m, 2});
    Value re = hlo::reshape(b, hlo::slice_dim(b, pairs, 1, 0, 1), {m});
    Value im = hlo::reshape(b, hlo::slice_dim(b, pairs, 1, 1, 2), {m});
    return hlo::complex(b, re, im);
  }
  int from = ir::itemsize(storage.dtype()), to = ir::itemsize(dtype);
  int64_t n = storage.dim(0);
  if (from == to) return hlo::bitcast_convert(b, storage, dtype);
  if (from > to) return hlo::reshape(b, hlo::bitcast_convert(b, storage, dtype), {n * (from / to)});
  int64_t m = n / (to / from);
  // A tail that does not fill a whole element is not visible through the wider dtype.
  Value body = hlo::slice(b, storage, {0}, {m * (to / from)});
  return hlo::bitcast_convert(b, hlo::reshape(b, body, {m, to / from}), dtype);
}

Value to_storage(ir::Builder& b, const Value& value, const std::vector<int64_t>& strides) {
  std::vector<int64_t> perm = dense_permutation(value.shape(), strides);
  Value v = perm.empty() ? value : hlo::transpose(b, value, perm);
  return hlo::reshape(b, v, {value.type.numel()});
}

}  // namespace tpu::lowering
