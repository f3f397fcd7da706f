// Shape-changing copies: cat, stack, flip, roll, repeat, tril/triu, constant_pad_nd,
// diag_embed, narrow_copy, split_with_sizes_copy. (fill/zero live in creation.cpp.)
// (Views such as split/chunk/narrow are the glue's business; these produce new tensors.)
#include <algorithm>

#include "lowering/core/hlo.h"
#include "lowering/core/registry.h"

namespace tpu::lowering {

namespace {

using ir::DType;
using ir::Shape;
using ir::Value;

// cat(tensors, dim): inputs are promoted to the result dtype. Empty inputs contribute nothing;
// this also covers the legacy rule that 1-d tensors of size 0 are skipped whatever the rank.
std::vector<Value> lower_cat(Ctx& c) {
  const ir::Type& out = c.out();
  if (out.numel() == 0) return {hlo::full(c.b, out, 0)};
  const int64_t dim = hlo::wrap_dim(c.int_arg("dim"), out.rank());
  std::vector<Value> parts;
  for (const Value& v : c.arg("tensors").values)
    if (v.type.numel() > 0) parts.push_back(hlo::convert(c.b, v, out.dtype));
  return {hlo::concatenate(c.b, parts, dim)};
}

// cat on padded values: each part is written after the real elements of the ones before it, at a
// runtime position, into an array long enough for every part's bound (so no write is clamped),
// then cut to the result's bound. A later part overwrites the padding of the one before.
std::vector<Value> lower_cat_padded(Ctx& c) {
  const ir::Type& out = c.out();
  const int64_t dim = hlo::wrap_dim(c.int_arg("dim"), out.rank());
  const Arg& tensors = c.arg("tensors");
  std::vector<Value> parts;
  std::vector<Dims> dims;
  for (size_t i = 0; i < tensors.values.size(); ++i) {
    const Value& v = tensors.values[i];
    if (!v.valid() || v.type.numel() == 0) continue;
    if (v.rank() != out.rank()) throw NotPaddable("cat of tensors of other ranks");
    for (int d = 0; d < out.rank(); ++d)
      if (d != dim && v.dim(d) != out.shape[d]) throw NotPaddable("cat of parts padded differently");
    parts.push_back(hlo::convert(c.b, v, out.dtype));
    dims.push_back(i < tensors.list_dims.size() ? tensors.list_dims[i] : Dims{});
  }
  bool along_dynamic = false;
  for (const Dims& d : dims) along_dynamic |= dim < static_cast<int64_t>(d.size()) && d[dim].valid();
  if (!along_dynamic) return lower_cat(c);
  ir::Shape room = out.shape;
  room[dim] = 0;
  for (const Value& v : parts) room[dim] += v.dim(static_cast<int>(dim));
  room[dim] = std::max(room[dim], out.shape[dim]);
  Value result = hlo::full(c.b, ir::Type{out.dtype, room}, 0);
  Value zero = hlo::constant_int(c.b, DType::I64, 0);
  Value at = zero;
  for (size_t i = 0; i < parts.size(); ++i) {
    std::vector<Value> starts(out.rank(), zero);
    starts[dim] = at;
    result = hlo::dynamic_update_slice(c.b, result, parts[i], starts);
    at = hlo::add(c.b, at, dim_size(c.b, parts[i], dims[i], static_cast<int>(dim)));
  }
  return {hlo::slice_dim(c.b, result, static_cast<int>(dim), 0, out.shape[dim])};
}

// stack(tensors, dim)
std::vector<Value> lower_stack(Ctx& c) {
  const ir::Type& out = c.out();
  const int64_t dim = hlo::wrap_dim(c.int_arg("dim"), out.rank());
  if (out.numel() == 0) return {hlo::full(c.b, out, 0)};
  std::vector<Value> parts;
  for (const Value& v : c.arg("tensors").values) {
    Shape s = v.shape();
    s.insert(s.begin() + dim, 1);
    parts.push_back(hlo::reshape(c.b, hlo::convert(c.b, v, out.dtype), s));
  }
  return {hlo::concatenate(c.b, parts, dim)};
}

// flip(self, dims)
std::vector<Value> lower_flip(Ctx& c) {
  const Value& x = c.tensor("self");
  std::vector<int64_t> dims;
  for (int64_t d : c.ints("dims")) {
    int64_t w = hlo::wrap_dim(d, x.rank());
    if (x.rank() > 0 && x.shape()[w] > 1) dims.push_back(w);
  }
  return {hlo::reverse(c.b, x, dims)};
}

// flip on padded values: a dynamic dimension reversed puts its padding first, so the result is
// read (L real elements) from position bound - L.
std::vector<Value> lower_flip_padded(Ctx& c) {
  Value x = lower_flip(c)[0];
  const Dims& dims = c.dims("self");
  for (int64_t d : c.ints("dims")) {
    const int w = static_cast<int>(hlo::wrap_dim(d, x.rank()));
    if (w >= static_cast<int>(dims.size()) || !dims[w].valid()) continue;
    const int64_t bound = x.dim(w);
    std::vector<int64_t> low(x.rank(), 0), high(x.rank(), 0);
    high[w] = bound;
    Value room = hlo::pad(c.b, x, hlo::constant(c.b, x.dtype(), 0), low, high);
    std::vector<Value> starts(x.rank(), hlo::constant_int(c.b, DType::I64, 0));
    starts[w] = hlo::sub(c.b, hlo::constant_int(c.b, DType::I64, bound), dims[w]);
    x = hlo::dynamic_slice(c.b, room, starts, x.shape());
  }
  return {x};
}

// Rotates `x` by `shift` along `dim`: out[i] = x[(i - shift) mod n].
Value roll_dim(ir::Builder& b, const Value& x, int64_t dim, int64_t shift) {
  const int64_t n = x.shape()[dim];
  if (n == 0) return x;
  int64_t s = ((shift % n) + n) % n;
  if (s == 0) return x;
  Value tail = hlo::slice_dim(b, x, static_cast<int>(dim), n - s, n);
  Value head = hlo::slice_dim(b, x, static_cast<int>(dim), 0, n - s);
  return hlo::concatenate(b, {tail, head}, dim);
}

// roll(self, shifts, dims): without dims the flattened tensor rolls.
std::vector<Value> lower_roll(Ctx& c) {
  const Value& x = c.tensor("self");
  const std::vector<int64_t>& shifts = c.ints("shifts");
  const std::vector<int64_t> dims = c.has("dims") ? c.ints("dims") : std::vector<int64_t>{};
  if (dims.empty()) {
    Value flat = hlo::reshape(c.b, x, {x.type.numel()});
    return {hlo::reshape(c.b, roll_dim(c.b, flat, 0, shifts.at(0)), x.shape())};
  }
  Value r = x;
  for (size_t i = 0; i < dims.size(); ++i)
    r = roll_dim(c.b, r, hlo::wrap_dim(dims[i], x.rank()), shifts.at(i));
  return {r};
}

// repeat(self, repeats): self (padded with leading unit dims) broadcast to [r0, s0, r1, s1, ...]
// then merged pairwise.
std::vector<Value> lower_repeat(Ctx& c) {
  const Value& x = c.tensor("self");
  const std::vector<int64_t>& reps = c.ints("repeats");
  const size_t n = reps.size();
  Shape padded(n - x.rank(), 1);
  padded.insert(padded.end(), x.shape().begin(), x.shape().end());
  Value v = hlo::reshape(c.b, x, padded);
  Shape wide;
  std::vector<int64_t> dims;
  for (size_t i = 0; i < n; ++i) {
    wide.push_back(reps[i]);
    wide.push_back(padded[i]);
    dims.push_back(static_cast<int64_t>(2 * i + 1));
  }
  Value bcast = hlo::broadcast_in_dim(c.b, v, wide, dims);
  return {hlo::reshape(c.b, bcast, c.out().shape)};
}

// tril/triu(self, diagonal): keeps col - row <= diagonal (tril) or >= diagonal (triu).
Value triangle(Ctx& c, bool lower) {
  const Value& x = c.tensor("self");
  const int64_t diagonal = c.int_arg("diagonal");
  const int r = x.rank();
  Shape mat{x.shape()[r - 2], x.shape()[r - 1]};
  Value row = hlo::iota(c.b, ir::Type{DType::I64, mat}, 0);
  Value col = hlo::iota(c.b, ir::Type{DType::I64, mat}, 1);
  Value diff = hlo::sub(c.b, col, row);
  Value keep =
      hlo::compare(c.b, diff, hlo::full(c.b, diff.type, static_cast<double>(diagonal)), lower ? "LE" : "GE");
  keep = hlo::broadcast_to(c.b, keep, x.shape());
  return hlo::select(c.b, keep, x, hlo::full(c.b, x.type, 0));
}

std::vector<Value> lower_tril(Ctx& c) { return {triangle(c, true)}; }
std::vector<Value> lower_triu(Ctx& c) { return {triangle(c, false)}; }

// constant_pad_nd(self, pad, value): pad pairs start at the last dimension; negative pads crop
// (stablehlo.pad accepts negative edge padding).
std::vector<Value> lower_constant_pad_nd(Ctx& c) {
  const Value& x = c.tensor("self");
  const std::vector<int64_t>& pad = c.ints("pad");
  std::vector<int64_t> low(x.rank(), 0), high(x.rank(), 0);
  for (size_t i = 0; 2 * i < pad.size(); ++i) {
    int d = x.rank() - 1 - static_cast<int>(i);
    low[d] = pad[2 * i];
    high[d] = pad[2 * i + 1];
  }
  Value v = c.has("value") ? hlo::reshape(c.b, hlo::convert(c.b, c.tensor("value"), x.dtype()), {})
                           : hlo::constant(c.b, x.dtype(), 0);
  return {hlo::pad(c.b, x, v, low, high)};
}

// diag_embed(self, offset, dim1, dim2): the last dim of self becomes the `offset` diagonal of
// a new pair of dims (dim1, dim2) of size n + |offset|.
std::vector<Value> lower_diag_embed(Ctx& c) {
  const Value& x = c.tensor("self");
  const ir::Type& out = c.out();
  const int64_t offset = c.int_arg("offset");
  const int64_t rank = out.rank();
  const int64_t d1 = hlo::wrap_dim(c.int_arg("dim1"), rank), d2 = hlo::wrap_dim(c.int_arg("dim2"), rank);
  const int64_t n = x.shape().back();
  const int64_t m = n + (offset >= 0 ? offset : -offset);
  const int64_t nb = x.rank() - 1;
  // Canonical layout [batch..., row, col]; the diagonal value at (i, j) is x[..., i] (offset
  // >= 0, j = i + offset) or x[..., j] (offset < 0, i = j - offset), padded to m entries.
  std::vector<int64_t> low(x.rank(), 0), high(x.rank(), 0);
  high.back() = m - n;
  Value v = hlo::pad(c.b, x, hlo::constant(c.b, x.dtype(), 0), low, high);
  Shape canon(x.shape().begin(), x.shape().end() - 1);
  canon.push_back(m);
  canon.push_back(m);
  std::vector<int64_t> bdims;
  for (int64_t i = 0; i < nb; ++i) bdims.push_back(i);
  bdims.push_back(offset >= 0 ? nb : nb + 1);
  Value vals = hlo::broadcast_in_dim(c.b, v, canon, bdims);
  Value row = hlo::iota(c.b, ir::Type{DType::I64, canon}, nb);
  Value col = hlo::iota(c.b, ir::Type{DType::I64, canon}, nb + 1);
  Value on_diag =
      hlo::compare(c.b, hlo::sub(c.b, col, row), hlo::full(c.b, row.type, static_cast<double>(offset)), "EQ");
  Value t = hlo::select(c.b, on_diag, vals, hlo::full(c.b, vals.type, 0));
  // Result dim p comes from canonical dim perm[p].
  std::vector<int64_t> perm;
  int64_t next_batch = 0;
  for (int64_t p = 0; p < rank; ++p) perm.push_back(p == d1 ? nb : p == d2 ? nb + 1 : next_batch++);
  return {hlo::transpose(c.b, t, perm)};
}

// narrow_copy(self, dim, start, length)
std::vector<Value> lower_narrow_copy(Ctx& c) {
  const Value& x = c.tensor("self");
  const int64_t dim = hlo::wrap_dim(c.int_arg("dim"), x.rank());
  int64_t start = c.int_arg("start");
  if (start < 0) start += x.shape()[dim];
  return {hlo::slice_dim(c.b, x, static_cast<int>(dim), start, start + c.int_arg("length"))};
}

// split_with_sizes_copy(self, split_sizes, dim)
std::vector<Value> lower_split_with_sizes_copy(Ctx& c) {
  const Value& x = c.tensor("self");
  const int64_t dim = hlo::wrap_dim(c.has("dim") ? c.int_arg("dim") : 0, x.rank());
  std::vector<Value> outs;
  int64_t start = 0;
  for (int64_t s : c.ints("split_sizes")) {
    outs.push_back(hlo::slice_dim(c.b, x, static_cast<int>(dim), start, start + s));
    start += s;
  }
  return outs;
}

}  // namespace

TPU_LOWERING("aten::cat", lower_cat, reads({"tensors", "dim"}));
TPU_LOWERING("aten::stack", lower_stack, reads({"tensors", "dim"}));
TPU_LOWERING("aten::flip", lower_flip, reads({"self", "dims"}));
TPU_LOWERING("aten::roll", lower_roll, reads({"self", "shifts", "dims"}));
TPU_LOWERING("aten::repeat", lower_repeat, reads({"self", "repeats"}));
TPU_LOWERING("aten::tril", lower_tril, reads({"self", "diagonal"}));
TPU_LOWERING("aten::triu", lower_triu, reads({"self", "diagonal"}));
TPU_LOWERING("aten::constant_pad_nd", lower_constant_pad_nd, reads({"self", "pad", "value"}));
TPU_LOWERING("aten::diag_embed", lower_diag_embed, reads({"self", "offset", "dim1", "dim2"}));
TPU_LOWERING("aten::narrow_copy", lower_narrow_copy, reads({"self", "dim", "start", "length"}));
TPU_LOWERING("aten::split_with_sizes_copy", lower_split_with_sizes_copy,
             reads({"self", "split_sizes", "dim"}));

// Padded execution (docs/dynamic_shapes.md).
TPU_PADDED("aten::cat", custom(lower_cat_padded));
TPU_PADDED("aten::flip", custom(lower_flip_padded));
TPU_PADDED("aten::stack", pointwise());
TPU_PADDED("aten::tril", pointwise());
TPU_PADDED("aten::triu", pointwise());

}  // namespace tpu::lowering
