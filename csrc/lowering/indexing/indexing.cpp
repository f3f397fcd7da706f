// Indexing by integer tensors: index_select, index.Tensor (advanced indexing), index_put,
// index_add, index_copy, index_fill, index_reduce, take, put, masked_scatter.
//
// Boolean masks never reach these lowerings: the glue turns them into long indices first.
// Negative indices wrap as in Python; out-of-range indices are PyTorch errors raised before
// lowering on CPU, and here follow XLA (gather clamps, scatter drops).
#include <algorithm>
#include <stdexcept>

#include "lowering/core/index_util.h"
#include "lowering/core/reduce_util.h"
#include "lowering/core/registry.h"

namespace tpu::lowering {

namespace {

using ir::DType;
using ir::Shape;
using ir::Value;

std::vector<int64_t> range(int64_t from, int64_t to) {
  std::vector<int64_t> v;
  for (int64_t i = from; i < to; ++i) v.push_back(i);
  return v;
}

Shape broadcast_shapes(const std::vector<Shape>& shapes) {
  size_t rank = 0;
  for (const Shape& s : shapes) rank = std::max(rank, s.size());
  Shape out(rank, 1);
  for (const Shape& s : shapes) {
    size_t off = rank - s.size();
    for (size_t i = 0; i < s.size(); ++i)
      if (s[i] != 1) out[off + i] = s[i];
  }
  return out;
}

// For each position of a flat boolean mask, the index of the True element at or before it in
// the sequence of True elements, clamped to [0, count): where the k-th True position takes
// row k of a source with `count` rows.
Value mask_ranks(ir::Builder& b, const Value& mask_flat, int64_t count) {
  Value csum = reduce::running_sum(b, hlo::convert(b, mask_flat, DType::I64), 0);
  Value pos = hlo::sub(b, csum, hlo::full(b, csum.type, 1));
  pos = hlo::max(b, pos, hlo::full(b, pos.type, 0));
  return hlo::min(b, pos, hlo::full(b, pos.type, static_cast<double>(count - 1)));
}

// ---- advanced indexing ------------------------------------------------------------------

// self[indices] as PyTorch/NumPy define it, prepared for one gather or scatter: `self`
// transposed so indexed dimensions come first, the stacked index vectors, and how the gathered
// [B..., rest...] result maps to PyTorch's order (B inserted at the first indexed dimension
// when the indexed dimensions are adjacent, else in front).
struct Advanced {
  Value self_t;               // self with indexed dims first
  std::vector<int64_t> perm;  // self_t = transpose(self, perm)
  Value coords;               // i64 [B..., n_indexed]
  Shape batch;                // B
  Shape rest;                 // sizes of the non-indexed dims, in order
  int64_t n_indexed = 0;
  int64_t insert_at = 0;  // position of B in PyTorch's result
};

Advanced prepare_advanced(Ctx& c, const Value& self, const Arg& list) {
  ir::Builder& b = c.b;
  Advanced a;
  std::vector<int64_t> indexed;
  std::vector<Value> idx;
  std::vector<Shape> shapes;
  for (size_t d = 0; d < list.values.size(); ++d) {
    if (!list.values[d].valid()) continue;
    indexed.push_back(static_cast<int64_t>(d));
    idx.push_back(list.values[d]);
    shapes.push_back(list.values[d].shape());
  }
  a.n_indexed = static_cast<int64_t>(indexed.size());
  a.batch = broadcast_shapes(shapes);
  bool adjacent = indexed.empty() || indexed.back() - indexed.front() + 1 == a.n_indexed;
  a.insert_at = adjacent && !indexed.empty() ? indexed.front() : 0;
  a.perm = indexed;
  for (int64_t d = 0; d < self.rank(); ++d) {
    if (std::find(indexed.begin(), indexed.end(), d) == indexed.end()) {
      a.perm.push_back(d);
      a.rest.push_back(self.shape()[d]);
    }
  }
  a.self_t = hlo::transpose(b, self, a.perm);
  Shape one = a.batch;
  one.push_back(1);
  std::vector<Value> parts;
  for (size_t k = 0; k < idx.size(); ++k) {
    const int64_t size = self.shape()[indexed[k]];
    idx::require_in_range(c, idx[k], size, true, idx::out_of_bounds(indexed[k], size));
    Value w = idx::wrap_index(b, idx[k], size);
    parts.push_back(hlo::reshape(b, hlo::broadcast_to(b, w, a.batch), one));
  }
  if (!parts.empty()) a.coords = hlo::concatenate(b, parts, static_cast<int64_t>(a.batch.size()));
  return a;
}

// Permutation taking [B..., rest...] to PyTorch's result order.
std::vector<int64_t> result_perm(const Advanced& a) {
  const int64_t nb = static_cast<int64_t>(a.batch.size());
  const int64_t nr = static_cast<int64_t>(a.rest.size());
  std::vector<int64_t> perm = range(nb, nb + a.insert_at);
  for (int64_t i = 0; i < nb; ++i) perm.push_back(i);
  for (int64_t i = nb + a.insert_at; i < nb + nr; ++i) perm.push_back(i);
  return perm;
}

std::vector<int64_t> inverse(const std::vector<int64_t>& perm) {
  std::vector<int64_t> inv(perm.size());
  for (size_t i = 0; i < perm.size(); ++i) inv[perm[i]] = static_cast<int64_t>(i);
  return inv;
}

// index.Tensor(self, Tensor?[] indices)
std::vector<Value> lower_index(Ctx& c) {
  const Value& self = c.tensor("self");
  Advanced a = prepare_advanced(c, self, c.arg("indices"));
  if (a.n_indexed == 0) return {self};
  const int64_t nb = static_cast<int64_t>(a.batch.size());
  idx::GatherDims d;
  d.offset_dims = range(nb, nb + static_cast<int64_t>(a.rest.size()));
  d.collapsed_slice_dims = range(0, a.n_indexed);
  d.start_index_map = range(0, a.n_indexed);
  d.index_vector_dim = nb;
  d.slice_sizes = std::vector<int64_t>(a.n_indexed, 1);
  d.slice_sizes.insert(d.slice_sizes.end(), a.rest.begin(), a.rest.end());
  Value g = idx::gather(c.b, a.self_t, a.coords, d);
  return {hlo::reshape(c.b, hlo::transpose(c.b, g, result_perm(a)), c.out().shape)};
}

// index_put(self, Tensor?[] indices, values, accumulate) and its aliases (_index_put_impl,
// _unsafe_index_put): values are broadcast to the shape of self[indices], brought to the
// gather's [B..., rest...] order, and scattered (replacing or adding).
bool is_mask(const Value& v) { return v.valid() && (v.dtype() == DType::Bool || v.dtype() == DType::U8); }

// x[mask] = values (or +=) with one boolean mask covering dims [p, p + mask.rank()) and no
// other index. Static, unlike reading x[mask]: values either broadcast over the selected
// positions (size 1 there) or hold one row per True position, taken in order as in
// masked_scatter; the result is a select.
Value index_put_mask(Ctx& c, const Value& self, const Value& mask, int64_t p, bool accumulate) {
  const int64_t k = mask.rank();
  Shape pre(self.shape().begin(), self.shape().begin() + p);
  Shape post(self.shape().begin() + p + k, self.shape().end());
  const int64_t m = mask.type.numel();
  Shape flat = pre;
  flat.push_back(m);
  flat.insert(flat.end(), post.begin(), post.end());
  Value x = hlo::reshape(c.b, self, flat);
  Value mk = hlo::reshape(c.b, hlo::convert(c.b, mask, DType::Bool), {m});
  Value vals = hlo::convert(c.b, c.tensor("values"), self.dtype());
  const int rank = static_cast<int>(flat.size());
  if (vals.rank() > rank)
    vals = hlo::reshape(c.b, vals, Shape(vals.shape().end() - rank, vals.shape().end()));
  if (vals.rank() < rank) {
    Shape s(rank - vals.rank(), 1);
    s.insert(s.end(), vals.shape().begin(), vals.shape().end());
    vals = hlo::reshape(c.b, vals, s);
  }
  const int64_t count = vals.shape()[p];
  if (count == 0) return self;  // no True position
  Value rows;
  if (count == 1) {
    rows = hlo::broadcast_to(c.b, vals, flat);
  } else {
    Value trues = hlo::reduce(c.b, hlo::convert(c.b, mk, DType::I64), hlo::constant_int(c.b, DType::I64, 0),
                              {0}, hlo::Combiner::Add);
    c.require(hlo::compare(c.b, trues, hlo::constant_int(c.b, DType::I64, count), "EQ"),
              "shape mismatch: value tensor cannot be broadcast to indexing result");
    Shape full = flat;
    full[p] = count;
    rows = idx::gather_along(c.b, hlo::broadcast_to(c.b, vals, full), p, mask_ranks(c.b, mk, count));
  }
  Value updated = accumulate ? hlo::combine(c.b, idx::add_op(self.dtype()), x, rows) : rows;
  Value sel = hlo::broadcast_in_dim(c.b, mk, flat, {p});
  return hlo::reshape(c.b, hlo::select(c.b, sel, updated, x), self.shape());
}

std::vector<Value> lower_index_put(Ctx& c) {
  const Value& self = c.tensor("self");
  const bool accumulate = c.has("accumulate") && c.bool_arg("accumulate");
  const auto& list = c.arg("indices").values;
  int64_t mask_at = -1, masks = 0, others = 0;
  for (size_t e = 0; e < list.size(); ++e) {
    if (is_mask(list[e])) {
      ++masks;
      mask_at = static_cast<int64_t>(e);
    } else if (list[e].valid()) {
      ++others;
    }
  }
  if (masks > 0) {
    if (masks > 1 || others > 0)
      throw std::invalid_argument(
          "torch_tpu: index_put with a boolean mask and other index tensors is not supported");
    // Every entry before the mask is None and stands for one dimension.
    return {index_put_mask(c, self, list[mask_at], mask_at, accumulate)};
  }
  Advanced a = prepare_advanced(c, self, c.arg("indices"));
  const int64_t nb = static_cast<int64_t>(a.batch.size());
  if (a.n_indexed == 0) return {self};
  std::vector<int64_t> rperm = result_perm(a);
  Shape result_shape;
  Shape gathered = a.batch;
  gathered.insert(gathered.end(), a.rest.begin(), a.rest.end());
  for (int64_t p : rperm) result_shape.push_back(gathered[p]);
  Value values = hlo::convert(c.b, c.tensor("values"), self.dtype());
  // Leading unit dimensions beyond the result's rank are dropped, as __setitem__ does.
  if (values.rank() > static_cast<int>(result_shape.size())) {
    Shape s(values.shape().end() - result_shape.size(), values.shape().end());
    values = hlo::reshape(c.b, values, s);
  }
  if (!hlo::broadcastable(values.shape(), result_shape))
    throw std::invalid_argument("shape mismatch: value tensor of shape " + hlo::shape_str(values.shape()) +
                                " cannot be broadcast to indexing result of shape " +
                                hlo::shape_str(result_shape));
  values = hlo::broadcast_to(c.b, values, result_shape);
  Value updates = hlo::transpose(c.b, values, inverse(rperm));
  idx::ScatterDims d;
  d.update_window_dims = range(nb, nb + static_cast<int64_t>(a.rest.size()));
  d.inserted_window_dims = range(0, a.n_indexed);
  d.scatter_dims_to_operand_dims = range(0, a.n_indexed);
  d.index_vector_dim = nb;
  Value r = a.self_t;
  if (updates.type.numel() > 0)
    r = idx::scatter(c.b, a.self_t, a.coords, updates, d,
                     accumulate ? idx::ScatterCombiner(idx::add_op(self.dtype())) : hlo::kReplace);
  return {hlo::transpose(c.b, r, inverse(a.perm))};
}

// ---- one dimension ----------------------------------------------------------------------

// index_select(self, dim, index)
std::vector<Value> lower_index_select(Ctx& c) {
  Value self = idx::at_least_1d(c.b, c.tensor("self"));
  const int64_t dim = hlo::wrap_dim(c.int_arg("dim"), c.tensor("self").rank());
  const Value& index = c.tensor("index");
  const int64_t n = index.type.numel();
  idx::require_in_range(c, index, self.shape()[dim], false, "index out of range in self");
  Value ind = hlo::reshape(c.b, idx::wrap_index(c.b, index, self.shape()[dim]), {n});
  return {hlo::reshape(c.b, idx::gather_along(c.b, self, dim, ind), c.out().shape)};
}

// Shared body of index_add / index_copy / index_fill: rows `updates` (self's shape with `dim`
// of size index.numel()) scattered along `dim`.
Value index_scatter(Ctx& c, const Value& self_in, int64_t dim, const Value& index, const Value& updates_in,
                    idx::ScatterCombiner combine, bool allow_negative,
                    const std::string& message_prefix = "") {
  Value self = idx::at_least_1d(c.b, self_in);
  const int64_t size = self.shape()[dim];
  idx::require_in_range(c, index, size, allow_negative, message_prefix + idx::out_of_bounds(dim, size));
  const int64_t n = index.type.numel();
  Shape ushape = self.shape();
  ushape[dim] = n;
  if (n == 0) return hlo::reshape(c.b, self, c.out().shape);
  Value updates = updates_in.rank() == 0 ? hlo::broadcast_to(c.b, updates_in, ushape)
                                         : hlo::reshape(c.b, updates_in, ushape);
  Value r = idx::scatter_along(c.b, self, dim, hlo::reshape(c.b, index, {n}), updates, combine);
  return hlo::reshape(c.b, r, c.out().shape);
}

// index_add(self, dim, index, source, *, alpha): self + alpha * source rows, like the CPU
// kernel's per-row `add_(source_row, alpha)` (alpha * source in opmath, then the add).
std::vector<Value> lower_index_add(Ctx& c) {
  const Value& self = c.tensor("self");
  const int64_t dim = hlo::wrap_dim(c.int_arg("dim"), self.rank());
  const DType t = self.dtype();
  DType opmath = compute_dtype(t);
  Value src = hlo::convert(c.b, c.tensor("source"), opmath);
  if (c.has("alpha")) {
    Value alpha = hlo::convert(c.b, c.tensor("alpha"), opmath);
    src = t == DType::Bool ? hlo::and_(c.b, src, hlo::broadcast_to(c.b, alpha, src.shape()))
                           : hlo::mul(c.b, src, hlo::broadcast_to(c.b, alpha, src.shape()));
  }
  src = hlo::convert(c.b, src, t);
  return {index_scatter(c, self, dim, c.tensor("index"), src, idx::add_op(t), false)};
}

// index_reduce(self, dim, index, source, reduce, *, include_self): source rows combined into the
// rows of self that index names, by prod / mean / amax / amin. Without include_self those rows
// start from the reduction's identity instead of self. mean divides by the number of values
// combined (self counted when included; integers floor-divide, as CPU does).
std::vector<Value> lower_index_reduce(Ctx& c) {
  const Value& self = c.tensor("self");
  const Value& index = c.tensor("index");
  const int64_t dim = hlo::wrap_dim(c.int_arg("dim"), std::max<int64_t>(self.rank(), 1));
  const DType t = self.dtype();
  const std::string& reduce = c.arg("reduce").s;
  const bool include_self = c.bool_arg("include_self");
  const std::string prefix = "index_reduce(): ";
  Value src = hlo::convert(c.b, c.tensor("source"), t);
  hlo::Combiner combine = reduce == "prod"   ? idx::mul_op(t)
                          : reduce == "amax" ? (t == DType::Bool ? hlo::Combiner::Or : hlo::Combiner::Max)
                          : reduce == "amin" ? (t == DType::Bool ? hlo::Combiner::And : hlo::Combiner::Min)
                                             : idx::add_op(t);
  auto rows_hit = [&](const Value& base, const Value& value, idx::ScatterCombiner how) {
    return index_scatter(c, base, dim, index, hlo::broadcast_to(c.b, value, src.shape()), how, false, prefix);
  };
  Value start = self;
  if (!include_self) {
    Value identity = reduce == "prod"   ? hlo::full(c.b, self.type, 1)
                     : reduce == "amax" ? hlo::broadcast_to(c.b, reduce::lowest(c.b, t), self.shape())
                     : reduce == "amin" ? hlo::broadcast_to(c.b, reduce::highest(c.b, t), self.shape())
                                        : hlo::full(c.b, self.type, 0);
    ir::Type flags{DType::Bool, self.shape()};
    Value hit =
        rows_hit(hlo::full(c.b, flags, 0), hlo::full(c.b, ir::Type{DType::Bool, {}}, 1), hlo::kReplace);
    start = hlo::select(c.b, hit, identity, self);
  }
  Value r = index_scatter(c, start, dim, index, src, combine, false, prefix);
  if (reduce != "mean") return {r};
  ir::Type count_type{t == DType::Bool ? DType::I64 : t, self.shape()};
  Value counts = rows_hit(hlo::full(c.b, count_type, include_self ? 1 : 0),
                          hlo::full(c.b, ir::Type{count_type.dtype, {}}, 1), hlo::Combiner::Add);
  Value one = hlo::full(c.b, count_type, 1);
  counts = hlo::select(c.b, hlo::compare(c.b, counts, hlo::full(c.b, count_type, 0), "EQ"), one, counts);
  Value sum = hlo::convert(c.b, r, count_type.dtype);
  Value q = hlo::div(c.b, sum, counts);
  if (!ir::is_floating(t)) {
    // Integer division truncates; floor is one less where the remainder is negative.
    Value rem = hlo::rem(c.b, sum, counts);
    q = hlo::select(c.b, hlo::compare(c.b, rem, hlo::full(c.b, count_type, 0), "LT"), hlo::sub(c.b, q, one),
                    q);
  }
  return {hlo::convert(c.b, q, t)};
}

// index_copy(self, dim, index, source)
std::vector<Value> lower_index_copy(Ctx& c) {
  const Value& self = c.tensor("self");
  const int64_t dim = hlo::wrap_dim(c.int_arg("dim"), self.rank());
  Value src = hlo::convert(c.b, c.tensor("source"), self.dtype());
  return {index_scatter(c, self, dim, c.tensor("index"), src, hlo::kReplace, false, "index_copy_(): ")};
}

// index_fill.int_Scalar / int_Tensor(self, dim, index, value)
std::vector<Value> lower_index_fill(Ctx& c) {
  const Value& self = c.tensor("self");
  const int64_t dim = hlo::wrap_dim(c.int_arg("dim"), self.rank());
  Value v = hlo::reshape(c.b, hlo::convert(c.b, c.tensor("value"), self.dtype()), {});
  return {index_scatter(c, self, dim, c.tensor("index"), v, hlo::kReplace, true)};
}

// ---- flat indexing ----------------------------------------------------------------------

std::string out_of_range(int64_t numel) {
  return "out of range: tried to access an index on a tensor of " + std::to_string(numel) + " elements.";
}

// take(self, index): self.flatten()[index]
std::vector<Value> lower_take(Ctx& c) {
  const Value& self = c.tensor("self");
  const int64_t numel = self.type.numel();
  Value flat = hlo::reshape(c.b, self, {numel});
  const Value& index = c.tensor("index");
  idx::require_in_range(c, index, numel, true, out_of_range(numel));
  Value ind = idx::wrap_index(c.b, index, numel);
  idx::GatherDims d;
  d.collapsed_slice_dims = {0};
  d.start_index_map = {0};
  d.index_vector_dim = index.rank();
  d.slice_sizes = {1};
  return {hlo::reshape(c.b, idx::gather(c.b, flat, ind, d), c.out().shape)};
}

// put(self, index, source, accumulate): self.flatten()[index] = source (or +=)
std::vector<Value> lower_put(Ctx& c) {
  const Value& self = c.tensor("self");
  const int64_t numel = self.type.numel();
  const int64_t n = c.tensor("index").type.numel();
  const bool accumulate = c.has("accumulate") && c.bool_arg("accumulate");
  if (n == 0) return {self};
  idx::require_in_range(c, c.tensor("index"), numel, true, out_of_range(numel));
  Value flat = hlo::reshape(c.b, self, {numel});
  Value src = hlo::reshape(c.b, hlo::convert(c.b, c.tensor("source"), self.dtype()), {n});
  Value r = idx::scatter_along(c.b, flat, 0, hlo::reshape(c.b, c.tensor("index"), {n}), src,
                               accumulate ? idx::ScatterCombiner(idx::add_op(self.dtype())) : hlo::kReplace);
  return {hlo::reshape(c.b, r, self.shape())};
}

// masked_scatter(self, mask, source): the k-th True position of the (broadcast) mask takes
// source.flatten()[k] (k from a prefix sum of the mask); a gather and a select, all static.
std::vector<Value> lower_masked_scatter(Ctx& c) {
  const ir::Type& out = c.out();
  const int64_t n = out.numel();
  Value self = hlo::reshape(c.b, hlo::broadcast_to(c.b, c.tensor("self"), out.shape), {n});
  Value mask = hlo::reshape(c.b, hlo::broadcast_to(c.b, c.tensor("mask"), out.shape), {n});
  const Value& source = c.tensor("source");
  const int64_t s = source.type.numel();
  if (n > 0) {
    Value count = hlo::reduce(c.b, hlo::convert(c.b, mask, DType::I64), hlo::constant_int(c.b, DType::I64, 0),
                              {0}, hlo::Combiner::Add);
    c.require(hlo::compare(c.b, count, hlo::constant_int(c.b, DType::I64, s), "LE"),
              "Number of elements of source < number of ones in mask");
  }
  if (n == 0 || s == 0) return {hlo::reshape(c.b, self, out.shape)};
  Value pos = mask_ranks(c.b, mask, s);
  Value src = hlo::reshape(c.b, hlo::convert(c.b, source, out.dtype), {s});
  idx::GatherDims d;
  d.collapsed_slice_dims = {0};
  d.start_index_map = {0};
  d.index_vector_dim = 1;
  d.slice_sizes = {1};
  Value picked = idx::gather(c.b, src, pos, d);
  return {hlo::reshape(c.b, hlo::select(c.b, mask, picked, self), out.shape)};
}

}  // namespace

TPU_LOWERING("aten::index.Tensor", lower_index, reads({"self", "indices"}));
TPU_LOWERING("aten::_unsafe_index.Tensor", lower_index, reads({"self", "indices"}));
TPU_LOWERING("aten::index_put", lower_index_put, reads({"self", "indices", "values", "accumulate"}));
TPU_LOWERING("aten::_index_put_impl", lower_index_put, reads({"self", "indices", "values", "accumulate"}));
TPU_LOWERING("aten::_unsafe_index_put", lower_index_put, reads({"self", "indices", "values", "accumulate"}));
TPU_LOWERING("aten::index_select", lower_index_select, reads({"self", "dim", "index"}));
TPU_LOWERING("aten::index_add", lower_index_add, reads({"self", "dim", "index", "source", "alpha"}));
TPU_LOWERING("aten::index_copy", lower_index_copy, reads({"self", "dim", "index", "source"}));
TPU_LOWERING("aten::index_reduce", lower_index_reduce,
             reads({"self", "dim", "index", "source", "reduce", "include_self"}));
TPU_LOWERING("aten::index_fill.int_Scalar", lower_index_fill, reads({"self", "dim", "index", "value"}));
TPU_LOWERING("aten::index_fill.int_Tensor", lower_index_fill, reads({"self", "dim", "index", "value"}));
TPU_LOWERING("aten::take", lower_take, reads({"self", "index"}));
TPU_LOWERING("aten::put", lower_put, reads({"self", "index", "source", "accumulate"}));
TPU_LOWERING("aten::masked_scatter", lower_masked_scatter, reads({"self", "mask", "source"}));

// Padded execution: padded index positions read (or write nothing to) element 0.
TPU_PADDED("aten::index.Tensor", masked({{"indices", Neutral::Zero}}));
TPU_PADDED("aten::_unsafe_index.Tensor", masked({{"indices", Neutral::Zero}}));
TPU_PADDED("aten::index_select", masked({{"index", Neutral::Zero}}));
TPU_PADDED("aten::index_add", masked({{"index", Neutral::Zero}, {"source", Neutral::Zero}}));
TPU_PADDED("aten::index_copy", static_arguments({"index", "source"}));
TPU_PADDED("aten::index_fill.int_Scalar", static_arguments({"index"}));
TPU_PADDED("aten::index_fill.int_Tensor", static_arguments({"index", "value"}));

}  // namespace tpu::lowering
