#include "lowering/collectives/collectives.h"

#include <set>
#include <stdexcept>

#include "lowering/core/hlo.h"

namespace tpu::lowering::collective {

namespace {

using ir::DType;
using ir::Type;

std::string pairs_attr(const std::vector<std::vector<int64_t>>& rows) {
  std::string s = "dense<[";
  for (size_t i = 0; i < rows.size(); ++i) s += (i ? ", " : "") + ir::i64_list(rows[i]);
  return s + "]> : tensor<" + std::to_string(rows.size()) + "x" + std::to_string(rows[0].size()) + "xi64>";
}

// How replicas' values are combined. XLA's runtimes implement all_reduce and reduce_scatter
// only for add, multiply, minimum and maximum (XLA's ReductionKind); and, or and xor are
// `native = false`: the values are gathered and folded on every replica instead, which moves
// group-size times the data but gives the same result.
struct Combining {
  hlo::Combiner op;
  bool native = true;
};

Combining combining(ReduceOp op, DType dtype) {
  using hlo::Combiner;
  if (dtype == DType::Bool) {  // carried as ui8 0/1: or is maximum, and is minimum
    switch (op) {
      case ReduceOp::Sum:
      case ReduceOp::Max:
      case ReduceOp::BitOr:
        return {Combiner::Max};
      case ReduceOp::Product:
      case ReduceOp::Min:
      case ReduceOp::BitAnd:
        return {Combiner::Min};
      default:
        return {Combiner::Xor, false};
    }
  }
  switch (op) {
    case ReduceOp::Product:
      return {Combiner::Mul};
    case ReduceOp::Min:
      return {Combiner::Min};
    case ReduceOp::Max:
      return {Combiner::Max};
    case ReduceOp::BitAnd:
      return {Combiner::And, false};
    case ReduceOp::BitOr:
      return {Combiner::Or, false};
    case ReduceOp::BitXor:
      return {Combiner::Xor, false};
    default:  // SUM, AVG, PREMUL_SUM
      return {Combiner::Add};
  }
}

// The value that travels: bool as ui8 (collectives on i1 are not portable across runtimes),
// PREMUL_SUM's inputs already multiplied by the factor.
Value prepare(Builder& b, const Value& x, const Reduction& r) {
  if (x.dtype() == DType::Bool) return hlo::convert(b, x, DType::U8);
  if (r.op == ReduceOp::PremulSum) return hlo::mul(b, x, hlo::full(b, x.type, r.premul));
  return x;
}

// Back to the caller's type; AVG divides the group's sum by the group size (integers truncate,
// as NCCL's average does).
Value finish_reduction(Builder& b, const Value& y, const Reduction& r, DType dtype, int64_t group_size) {
  if (dtype == DType::Bool) return hlo::compare(b, y, hlo::full(b, y.type, 0), "NE");
  if (r.op == ReduceOp::Avg) return hlo::div(b, y, hlo::full(b, y.type, static_cast<double>(group_size)));
  return y;
}

// Folds `y`'s `count` equal blocks along `dim` with `op`, in block order.
Value fold_blocks(Builder& b, const Value& y, int64_t dim, int64_t count, hlo::Combiner op) {
  const int64_t block = y.dim(static_cast<int>(dim)) / count;
  Value acc = hlo::slice_dim(b, y, static_cast<int>(dim), 0, block);
  for (int64_t j = 1; j < count; ++j)
    acc = hlo::combine(b, op, acc, hlo::slice_dim(b, y, static_cast<int>(dim), j * block, (j + 1) * block));
  return acc;
}

int64_t group_size(const Groups& groups) {
  if (groups.empty() || groups[0].empty()) throw std::invalid_argument("replica groups must not be empty");
  return static_cast<int64_t>(groups[0].size());
}

}  // namespace

std::string reduce_op_name(ReduceOp op) {
  switch (op) {
    case ReduceOp::Sum:
      return "SUM";
    case ReduceOp::Avg:
      return "AVG";
    case ReduceOp::Product:
      return "PRODUCT";
    case ReduceOp::Min:
      return "MIN";
    case ReduceOp::Max:
      return "MAX";
    case ReduceOp::BitAnd:
      return "BAND";
    case ReduceOp::BitOr:
      return "BOR";
    case ReduceOp::BitXor:
      return "BXOR";
    case ReduceOp::PremulSum:
      return "PREMUL_SUM";
  }
  return "UNKNOWN(" + std::to_string(static_cast<int>(op)) + ")";
}

std::string replica_groups_attr(const Groups& groups) {
  const size_t size = static_cast<size_t>(group_size(groups));
  std::set<int64_t> seen;
  for (const auto& g : groups) {
    if (g.size() != size)
      throw std::invalid_argument("replica groups must all have the same size (got " +
                                  std::to_string(g.size()) + " and " + std::to_string(size) + ")");
    for (int64_t id : g)
      if (id < 0 || !seen.insert(id).second)
        throw std::invalid_argument("replica id " + std::to_string(id) +
                                    " is negative or appears in more than one place of the replica groups");
  }
  return pairs_attr(groups);
}

void check_reduction(const Reduction& r, DType dtype) {
  const std::string name = "ReduceOp." + reduce_op_name(r.op);
  const bool bitwise = r.op == ReduceOp::BitAnd || r.op == ReduceOp::BitOr || r.op == ReduceOp::BitXor;
  if (static_cast<int>(r.op) < 0 || static_cast<int>(r.op) > static_cast<int>(ReduceOp::PremulSum))
    throw std::invalid_argument("unsupported reduce op " + name);
  if (ir::is_float8(dtype))
    throw std::invalid_argument("in-program collectives do not reduce float8 tensors (" + name + ")");
  if (bitwise && dtype != DType::Bool && !ir::is_integral(dtype))
    throw std::invalid_argument("Cannot use " + name + " with non-integral dtype");
  if (dtype == DType::Bool && (r.op == ReduceOp::Avg || r.op == ReduceOp::PremulSum))
    throw std::invalid_argument("Cannot use " + name + " with boolean inputs");
  if (r.op == ReduceOp::PremulSum && ir::is_integral(dtype))
    throw std::invalid_argument("Cannot use " + name + " with integer inputs");
  if (ir::is_complex(dtype) && (r.op == ReduceOp::Min || r.op == ReduceOp::Max))
    throw std::invalid_argument("Cannot use " + name + " with complex inputs");
}

Value all_reduce(Builder& b, const Value& x, const Reduction& r, const Groups& groups) {
  check_reduction(r, x.dtype());
  const std::string groups_attr = replica_groups_attr(groups);
  const int64_t n = group_size(groups);
  Value v = prepare(b, x, r);
  const Combining c = combining(r.op, x.dtype());
  Value y;
  if (c.native) {
    Type scalar{v.dtype(), {}};
    y = b.op_with_region("stablehlo.all_reduce", {v}, {v.type}, "replica_groups = " + groups_attr,
                         {scalar, scalar}, hlo::combiner_body(c.op))[0];
  } else {
    Value flat = hlo::reshape(b, v, {v.type.numel()});
    Value gathered = all_gather(b, flat, 0, groups);
    y = hlo::reshape(b, fold_blocks(b, gathered, 0, n, c.op), v.shape());
  }
  return finish_reduction(b, y, r, x.dtype(), n);
}

Value all_gather(Builder& b, const Value& x, int64_t dim, const Groups& groups) {
  const std::string groups_attr = replica_groups_attr(groups);
  dim = hlo::wrap_dim(dim, x.rank());
  const bool carried = x.dtype() == DType::Bool;
  Value v = carried ? hlo::convert(b, x, DType::U8) : x;
  Type out = v.type;
  out.shape[dim] *= group_size(groups);
  Value y = b.op1("stablehlo.all_gather", {v}, out,
                  "all_gather_dim = " + std::to_string(dim) + " : i64, replica_groups = " + groups_attr);
  return carried ? hlo::convert(b, y, DType::Bool) : y;
}

Value reduce_scatter(Builder& b, const Value& x, int64_t dim, const Reduction& r, const Groups& groups) {
  check_reduction(r, x.dtype());
  const std::string groups_attr = replica_groups_attr(groups);
  const int64_t n = group_size(groups);
  dim = hlo::wrap_dim(dim, x.rank());
  if (x.dim(static_cast<int>(dim)) % n != 0)
    throw std::invalid_argument("reduce_scatter: dimension " + std::to_string(dim) + " of size " +
                                std::to_string(x.dim(static_cast<int>(dim))) + " does not split into " +
                                std::to_string(n) + " equal blocks");
  Value v = prepare(b, x, r);
  const Combining c = combining(r.op, x.dtype());
  Value y;
  if (c.native) {
    Type scalar{v.dtype(), {}};
    Type out = v.type;
    out.shape[dim] /= n;
    y = b.op_with_region(
        "stablehlo.reduce_scatter", {v}, {out},
        "scatter_dimension = " + std::to_string(dim) + " : i64, replica_groups = " + groups_attr,
        {scalar, scalar}, hlo::combiner_body(c.op))[0];
  } else {
    // Block i of every member, gathered on member i in group order, then folded.
    y = fold_blocks(b, all_to_all(b, v, dim, dim, groups), dim, n, c.op);
  }
  return finish_reduction(b, y, r, x.dtype(), n);
}

Value all_to_all(Builder& b, const Value& x, int64_t split_dim, int64_t concat_dim, const Groups& groups) {
  const std::string groups_attr = replica_groups_attr(groups);
  const int64_t n = group_size(groups);
  split_dim = hlo::wrap_dim(split_dim, x.rank());
  concat_dim = hlo::wrap_dim(concat_dim, x.rank());
  if (x.dim(static_cast<int>(split_dim)) % n != 0)
    throw std::invalid_argument("all_to_all: dimension " + std::to_string(split_dim) + " of size " +
                                std::to_string(x.dim(static_cast<int>(split_dim))) + " does not split into " +
                                std::to_string(n) + " equal blocks");
  const bool carried = x.dtype() == DType::Bool;
  Value v = carried ? hlo::convert(b, x, DType::U8) : x;
  Type out = v.type;
  out.shape[split_dim] /= n;
  out.shape[concat_dim] *= n;
  Value y = b.op1("stablehlo.all_to_all", {v}, out,
                  "split_dimension = " + std::to_string(split_dim) + " : i64, concat_dimension = " +
                      std::to_string(concat_dim) + " : i64, split_count = " + std::to_string(n) +
                      " : i64, replica_groups = " + groups_attr);
  return carried ? hlo::convert(b, y, DType::Bool) : y;
}

Value collective_permute(Builder& b, const Value& x, const std::vector<std::pair<int64_t, int64_t>>& pairs) {
  if (pairs.empty()) return hlo::full(b, x.type, 0);
  std::set<int64_t> sources, targets;
  std::vector<std::vector<int64_t>> rows;
  for (const auto& [s, t] : pairs) {
    if (s < 0 || t < 0) throw std::invalid_argument("collective_permute: negative replica id");
    if (!sources.insert(s).second)
      throw std::invalid_argument("collective_permute: replica " + std::to_string(s) + " is a source twice");
    if (!targets.insert(t).second)
      throw std::invalid_argument("collective_permute: replica " + std::to_string(t) + " is a target twice");
    rows.push_back({s, t});
  }
  const bool carried = x.dtype() == DType::Bool;
  Value v = carried ? hlo::convert(b, x, DType::U8) : x;
  Value y = b.op1("stablehlo.collective_permute", {v}, v.type, "source_target_pairs = " + pairs_attr(rows));
  return carried ? hlo::convert(b, y, DType::Bool) : y;
}

}  // namespace tpu::lowering::collective
