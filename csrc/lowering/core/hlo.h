// Typed emitters for StableHLO ops: the vocabulary every lowering is written in.
#pragma once
#include <string>
#include <vector>

#include "ir/builder.h"

namespace tpu::lowering::hlo {

using ir::Builder;
using ir::DType;
using ir::Shape;
using ir::Type;
using ir::Value;

Value constant(Builder& b, DType dtype, double v);  // handles inf/nan and every dtype
Value constant_int(Builder& b, DType dtype, int64_t v);
// A rank-1 i64 constant holding `v` (static index lists: gather positions, window sizes).
Value i64_vector(Builder& b, const std::vector<int64_t>& v);
// A constant of `shape` filled with `v` (a broadcast scalar constant).
Value full(Builder& b, const Type& type, double v);
Value convert(Builder& b, const Value& v, DType dtype);  // no-op when dtypes match
Value reshape(Builder& b, const Value& v, const Shape& shape);
Value transpose(Builder& b, const Value& v, const std::vector<int64_t>& perm);
Value broadcast_in_dim(Builder& b, const Value& v, const Shape& shape, const std::vector<int64_t>& dims);
// NumPy/PyTorch broadcasting of `v` to `shape` (trailing dimensions aligned).
Value broadcast_to(Builder& b, const Value& v, const Shape& shape);
// Whether `from` broadcasts to `to` (numpy rules, `to` at least as long), and "[2, 3]".
bool broadcastable(const Shape& from, const Shape& to);
std::string shape_str(const Shape& shape);
Value slice(Builder& b, const Value& v, const std::vector<int64_t>& start, const std::vector<int64_t>& limit,
            const std::vector<int64_t>& strides = {});
// Slice along one dimension [start, limit) with step.
Value slice_dim(Builder& b, const Value& v, int dim, int64_t start, int64_t limit, int64_t step = 1);
Value concatenate(Builder& b, const std::vector<Value>& vs, int64_t dim);
Value pad(Builder& b, const Value& v, const Value& pad_value, const std::vector<int64_t>& low,
          const std::vector<int64_t>& high, const std::vector<int64_t>& interior = {});
Value iota(Builder& b, const Type& type, int64_t dim);
Value reverse(Builder& b, const Value& v, const std::vector<int64_t>& dims);
Value dynamic_slice(Builder& b, const Value& v, const std::vector<Value>& starts,
                    const std::vector<int64_t>& sizes);
Value dynamic_update_slice(Builder& b, const Value& v, const Value& update, const std::vector<Value>& starts);

Value unary(Builder& b, const std::string& op, const Value& x);                   // "stablehlo.exponential"
Value binary(Builder& b, const std::string& op, const Value& x, const Value& y);  // same types
Value add(Builder& b, const Value& x, const Value& y);
Value sub(Builder& b, const Value& x, const Value& y);
Value mul(Builder& b, const Value& x, const Value& y);
Value div(Builder& b, const Value& x, const Value& y);
Value max(Builder& b, const Value& x, const Value& y);
Value min(Builder& b, const Value& x, const Value& y);
Value neg(Builder& b, const Value& x);
// dir: EQ NE LT LE GT GE; the comparison type follows the operands' dtype.
Value compare(Builder& b, const Value& x, const Value& y, const std::string& dir);
Value select(Builder& b, const Value& pred, const Value& on_true, const Value& on_false);
Value logical_not(Builder& b, const Value& x);
// i1 of x's shape: neither inf nor NaN (x real floating point).
Value is_finite(Builder& b, const Value& x);
// x with y's shape-compatible scalar of the same dtype, e.g. x * 0.5
Value scalar_like(Builder& b, const Value& x, double v);

// Reduces `dims` of `x` with the binary op `op` ("stablehlo.add", "stablehlo.maximum", ...).
Value reduce(Builder& b, const Value& x, const Value& init, const std::vector<int64_t>& dims,
             const std::string& op);
// Variadic reduce over several operands with a custom body.
std::vector<Value> reduce_multi(Builder& b, const std::vector<Value>& xs, const std::vector<Value>& inits,
                                const std::vector<int64_t>& dims, const Builder::RegionBody& body);
Value dot_general(Builder& b, const Value& lhs, const Value& rhs, const std::vector<int64_t>& lhs_batch,
                  const std::vector<int64_t>& rhs_batch, const std::vector<int64_t>& lhs_contract,
                  const std::vector<int64_t>& rhs_contract, DType out_dtype);

// stablehlo.convolution. Dimension numbers name which dimension of each operand plays which
// role; the result type follows from them (StableHLO's shape rules), in `out_dtype`.
struct ConvDims {
  int64_t input_batch = 0, input_feature = 1;
  std::vector<int64_t> input_spatial;
  int64_t kernel_input_feature = 1, kernel_output_feature = 0;
  std::vector<int64_t> kernel_spatial;
  int64_t output_batch = 0, output_feature = 1;
  std::vector<int64_t> output_spatial;
  // NC..., OI..., NC... with `spatial` spatial dimensions (PyTorch's layout).
  static ConvDims nchw(int spatial);
};
struct ConvWindow {
  std::vector<int64_t> strides;                      // per spatial dim (empty: all 1)
  std::vector<std::pair<int64_t, int64_t>> padding;  // (low, high), may be negative (empty: 0)
  std::vector<int64_t> lhs_dilation, rhs_dilation;   // empty: all 1
  int64_t feature_group_count = 1, batch_group_count = 1;
};
Value convolution(Builder& b, const Value& lhs, const Value& rhs, const ConvDims& dims,
                  const ConvWindow& window, DType out_dtype);

// stablehlo.reduce_window over several operands (same shapes) with `body` combining
// (accumulators..., values...). Empty strides / dilations mean 1; padding (low, high) per
// dimension (empty: none) is filled with the init values.
std::vector<Value> reduce_window(Builder& b, const std::vector<Value>& xs, const std::vector<Value>& inits,
                                 const std::vector<int64_t>& window, const std::vector<int64_t>& strides,
                                 const std::vector<std::pair<int64_t, int64_t>>& padding,
                                 const std::vector<int64_t>& window_dilation,
                                 const Builder::RegionBody& body);

// 0-d i1: every element of integer `index` lies in [-size, size).
Value indices_in_range(Builder& b, const Value& index, int64_t size);
// Normalises a possibly negative dimension index.
int64_t wrap_dim(int64_t dim, int64_t rank);
Type with_dtype(const Type& t, DType dtype);

}  // namespace tpu::lowering::hlo
