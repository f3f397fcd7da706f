// torch.gather and the torch.scatter family (scatter, scatter_add, scatter.reduce,
// scatter_reduce): element-wise indexing along one dimension, lowered to stablehlo.gather /
// stablehlo.scatter over full coordinates (one index vector per element of `index`).
#include <limits>
#include <stdexcept>

#include "lowering/core/dynamic.h"
#include "lowering/core/index_util.h"
#include "lowering/core/kit.h"
#include "lowering/core/registry.h"

namespace tpu::lowering {

namespace {

using ir::DType;
using ir::Value;

// Operand and index of a gather/scatter with 0-d tensors taken as rank 1 (PyTorch allows 0-d
// self/index there and treats them as one element).
struct Prepared {
  Value self;
  Value index;
  int64_t dim = 0;
};

Prepared prepare(Ctx& c, std::string_view self_arg, std::string_view dim_arg, std::string_view index_arg) {
  Prepared p;
  p.self = idx::at_least_1d(c.b, c.tensor(self_arg));
  p.dim = hlo::wrap_dim(c.int_arg(dim_arg), c.tensor(self_arg).rank());
  p.index = c.tensor(index_arg);
  if (p.index.rank() < p.self.rank()) {
    ir::Shape s(p.self.rank() - p.index.rank(), 1);
    s.insert(s.end(), p.index.shape().begin(), p.index.shape().end());
    p.index = hlo::reshape(c.b, p.index, s);
  }
  const int64_t size = p.self.shape()[p.dim];
  idx::require_in_range(c, p.index, size, false, idx::out_of_bounds(p.dim, size), CheckError::Runtime);
  return p;
}

// `src` cut down to the index's shape (scatter reads only src[:index.shape]), in dtype `t`.
Value src_for(Ctx& c, std::string_view src_arg, const Value& index, DType t) {
  Value src = hlo::convert(c.b, c.tensor(src_arg), t);
  if (src.rank() == 0) return hlo::broadcast_to(c.b, src, index.shape());
  if (src.rank() < index.rank()) src = hlo::reshape(c.b, src, index.shape());
  return hlo::slice(c.b, src, std::vector<int64_t>(index.rank(), 0), index.shape());
}

// gather(self, dim, index, *, sparse_grad)
std::vector<Value> lower_gather(Ctx& c) {
  Prepared p = prepare(c, "self", "dim", "index");
  return {finish(c, idx::gather_elements(c.b, p.self, p.index, p.dim))};
}

// What scatter writes: the tensor `src` (scatter.src) or the scalar `value` (scatter.value).
constexpr char kSrc[] = "src";
constexpr char kValue[] = "value";

// scatter.src(self, dim, index, src) / scatter.value(self, dim, index, value)
template <const char* Src>
std::vector<Value> lower_scatter(Ctx& c) {
  Prepared p = prepare(c, "self", "dim", "index");
  Value upd = src_for(c, Src, p.index, p.self.dtype());
  return {finish(c, idx::scatter_elements(c.b, p.self, p.index, p.dim, upd, hlo::kReplace))};
}

// Padded scatter (lowering/core/dynamic.h): the index's padding is checked as position 0, then
// points past self's (padded) extent, where stablehlo.scatter skips the update.
template <const char* Src>
std::vector<Value> lower_scatter_padded(Ctx& c) {
  Arg& index = c.args[c.index("index")];
  const Value real = valid_mask(c.b, index.value.shape(), index.dims);
  index.value = fill_padding(c.b, index.value, index.dims, hlo::constant(c.b, index.value.dtype(), 0));
  Prepared p = prepare(c, "self", "dim", "index");
  const Value past = hlo::full(c.b, p.index.type, static_cast<double>(p.self.shape()[p.dim]));
  p.index = hlo::select(c.b, hlo::reshape(c.b, real, p.index.shape()), p.index, past);
  Value upd = src_for(c, Src, p.index, p.self.dtype());
  return {finish(c, idx::scatter_elements(c.b, p.self, p.index, p.dim, upd, hlo::kReplace))};
}

// scatter_add(self, dim, index, src)
std::vector<Value> lower_scatter_add(Ctx& c) {
  Prepared p = prepare(c, "self", "dim", "index");
  Value upd = src_for(c, "src", p.index, p.self.dtype());
  return {finish(c, idx::scatter_elements(c.b, p.self, p.index, p.dim, upd, idx::add_op(p.self.dtype())))};
}

// scatter.reduce(self, dim, index, src, *, reduce) with reduce "add" or "multiply"
// (and scatter.value_reduce with a scalar value).
template <const char* Src>
std::vector<Value> lower_scatter_reduce_legacy(Ctx& c) {
  Prepared p = prepare(c, "self", "dim", "index");
  Value upd = src_for(c, Src, p.index, p.self.dtype());
  const std::string& reduce = c.arg("reduce").s;
  hlo::Combiner op{};
  if (reduce == "add")
    op = idx::add_op(p.self.dtype());
  else if (reduce == "multiply")
    op = idx::mul_op(p.self.dtype());
  else
    throw std::invalid_argument("reduce argument must be either add or multiply, got " + reduce);
  return {finish(c, idx::scatter_elements(c.b, p.self, p.index, p.dim, upd, op))};
}

double lowest(DType t) {
  switch (t) {
    case DType::Bool:
      return 0;
    case DType::U8:
    case DType::U16:
    case DType::U32:
    case DType::U64:
      return 0;
    case DType::I8:
      return std::numeric_limits<int8_t>::lowest();
    case DType::I16:
      return std::numeric_limits<int16_t>::lowest();
    case DType::I32:
      return std::numeric_limits<int32_t>::lowest();
    case DType::I64:
      return static_cast<double>(std::numeric_limits<int64_t>::lowest());
    default:
      return -std::numeric_limits<double>::infinity();
  }
}

double highest(DType t) {
  switch (t) {
    case DType::Bool:
      return 1;
    case DType::U8:
      return std::numeric_limits<uint8_t>::max();
    case DType::U16:
      return std::numeric_limits<uint16_t>::max();
    case DType::U32:
      return std::numeric_limits<uint32_t>::max();
    case DType::I8:
      return std::numeric_limits<int8_t>::max();
    case DType::I16:
      return std::numeric_limits<int16_t>::max();
    case DType::I32:
      return std::numeric_limits<int32_t>::max();
    default:
      return std::numeric_limits<double>::infinity();
  }
}

// A constant of type `t` holding the extreme integer (int64/uint64 limits need exact literals).
Value extreme(ir::Builder& b, const ir::Type& t, bool low) {
  if (t.dtype == DType::I64)
    return hlo::broadcast_in_dim(
        b,
        hlo::constant_int(b, t.dtype,
                          low ? std::numeric_limits<int64_t>::min() : std::numeric_limits<int64_t>::max()),
        t.shape, {});
  if (t.dtype == DType::U64 && !low)
    return hlo::broadcast_in_dim(b, hlo::constant_int(b, t.dtype, -1), t.shape, {});
  return hlo::full(b, t, low ? lowest(t.dtype) : highest(t.dtype));
}

// a / b rounded toward -inf for integers (b > 0 here: counts).
Value floor_div_positive(ir::Builder& b, const Value& a, const Value& d) {
  Value q = hlo::div(b, a, d);
  Value rem = hlo::rem(b, a, d);
  Value zero = hlo::full(b, a.type, 0);
  Value adjust = hlo::and_(b, hlo::compare(b, rem, zero, "NE"), hlo::compare(b, a, zero, "LT"));
  return hlo::select(b, adjust, hlo::sub(b, q, hlo::full(b, a.type, 1)), q);
}

// scatter_reduce.two(self, dim, index, src, reduce, *, include_self)
std::vector<Value> lower_scatter_reduce(Ctx& c) {
  Prepared p = prepare(c, "self", "dim", "index");
  const DType t = p.self.dtype();
  Value upd = src_for(c, "src", p.index, t);
  const std::string& reduce = c.arg("reduce").s;
  const bool include_self = !c.has("include_self") || c.bool_arg("include_self");
  hlo::Combiner op{};
  Value identity;
  if (reduce == "sum" || reduce == "mean") {
    op = idx::add_op(t);
    identity = hlo::full(c.b, upd.type, 0);
  } else if (reduce == "prod") {
    op = idx::mul_op(t);
    identity = hlo::full(c.b, upd.type, 1);
  } else if (reduce == "amax") {
    op = t == DType::Bool ? hlo::Combiner::Or : hlo::Combiner::Max;
    identity = extreme(c.b, upd.type, true);
  } else if (reduce == "amin") {
    op = t == DType::Bool ? hlo::Combiner::And : hlo::Combiner::Min;
    identity = extreme(c.b, upd.type, false);
  } else {
    throw std::invalid_argument("reduce argument must be either sum, prod, mean, amax or amin, got " +
                                reduce);
  }
  Value self = p.self;
  // Without self, every scattered-to position starts at the reduction's identity (as the CPU
  // kernel does with self.scatter_(dim, index, init)); the others keep self.
  if (!include_self) self = idx::scatter_elements(c.b, self, p.index, p.dim, identity, hlo::kReplace);
  Value r = idx::scatter_elements(c.b, self, p.index, p.dim, upd, op);
  if (reduce == "mean") {
    Value counts = hlo::full(c.b, self.type, include_self ? 1 : 0);
    counts = idx::scatter_elements(c.b, counts, p.index, p.dim, hlo::full(c.b, upd.type, 1), idx::add_op(t));
    Value zero = hlo::full(c.b, counts.type, 0);
    counts = hlo::select(c.b, hlo::compare(c.b, counts, zero, "EQ"), hlo::full(c.b, counts.type, 1), counts);
    if (ir::is_floating(t) || ir::is_complex(t)) {
      DType opmath = compute_dtype(t);
      r = hlo::convert(c.b, hlo::div(c.b, hlo::convert(c.b, r, opmath), hlo::convert(c.b, counts, opmath)),
                       t);
    } else {
      r = floor_div_positive(c.b, r, counts);
    }
  }
  return {finish(c, r)};
}

}  // namespace

TPU_LOWERING("aten::gather", lower_gather, reads({"self", "dim", "index"}));
TPU_LOWERING("aten::scatter.src", lower_scatter<kSrc>, reads({"self", "dim", "index", "src"}));
TPU_LOWERING("aten::scatter.value", lower_scatter<kValue>, reads({"self", "dim", "index", "value"}));
TPU_LOWERING("aten::scatter.reduce", lower_scatter_reduce_legacy<kSrc>,
             reads({"self", "dim", "index", "src", "reduce"}));
TPU_LOWERING("aten::scatter.value_reduce", lower_scatter_reduce_legacy<kValue>,
             reads({"self", "dim", "index", "value", "reduce"}));
TPU_LOWERING("aten::scatter_add", lower_scatter_add, reads({"self", "dim", "index", "src"}));
TPU_LOWERING("aten::scatter_reduce.two", lower_scatter_reduce,
             reads({"self", "dim", "index", "src", "reduce", "include_self"}));

TPU_PADDED("aten::gather", masked({{"index", Neutral::Zero}}));

// Padded execution: scatters at real positions; added values from padding are zeros.
TPU_PADDED("aten::scatter.src", custom(lower_scatter_padded<kSrc>));
TPU_PADDED("aten::scatter.value", custom(lower_scatter_padded<kValue>));
TPU_PADDED("aten::scatter_add", masked({{"index", Neutral::Zero}, {"src", Neutral::Zero}}));

}  // namespace tpu::lowering
