// Typed emitters for StableHLO ops: the vocabulary every lowering is written in. Lowerings emit
// StableHLO only through these functions (and lowering/collectives/collectives.h for the
// cross-replica ops); no op name is spelled outside them (tests/test_build.py checks). This
// header has constants, shape and data movement, reductions, windows, contractions, indexing,
// sorting, loops and the rest; the elementwise ops are in lowering/core/hlo_elementwise.h,
// which it includes.
#pragma once
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "ir/builder.h"
#include "lowering/core/hlo_elementwise.h"

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
// A rank-1 constant of floating `dtype` holding the finite values `v` (interpolation weights).
Value float_vector(Builder& b, const std::vector<double>& v, DType dtype);
// A constant of `shape` filled with `v` (a broadcast scalar constant).
Value full(Builder& b, const Type& type, double v);
// A constant of integer `type` filled with `v`, exact for every 64-bit value (which a double is
// not), as one splat constant.
Value full_int(Builder& b, const Type& type, int64_t v);
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

// x with y's shape-compatible scalar of the same dtype, e.g. x * 0.5
Value scalar_like(Builder& b, const Value& x, double v);

// Reduces `dims` of `x` with `op`.
Value reduce(Builder& b, const Value& x, const Value& init, const std::vector<int64_t>& dims, Combiner op);
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

// --- indexing --------------------------------------------------------------------------------
struct GatherDims {
  std::vector<int64_t> offset_dims;
  std::vector<int64_t> collapsed_slice_dims;
  std::vector<int64_t> start_index_map;
  int64_t index_vector_dim = 0;
  std::vector<int64_t> slice_sizes;
};
struct ScatterDims {
  std::vector<int64_t> update_window_dims;
  std::vector<int64_t> inserted_window_dims;
  std::vector<int64_t> scatter_dims_to_operand_dims;
  int64_t index_vector_dim = 0;
};
// stablehlo.gather; the result shape follows from the dimension numbers.
Value gather(Builder& b, const Value& operand, const Value& indices, const GatherDims& dims);
// stablehlo.scatter of `updates` into `operand` at `indices`: each update replaces its element
// (kReplace) or is combined with it by `combine`. The result has the operand's type.
Value scatter(Builder& b, const Value& operand, const Value& indices, const Value& updates,
              const ScatterDims& dims, ScatterCombiner combine);

// --- sorting and loops ---------------------------------------------------------------------
// stablehlo.sort of `xs` (one shape) along `dim`, permuted together. `less` gets the 0-d pair
// (lhs, rhs) of every operand in order (x0_lhs, x0_rhs, x1_lhs, ...) and returns one 0-d i1:
// whether lhs goes first. Results have the operands' types.
std::vector<Value> sort(Builder& b, const std::vector<Value>& xs, int64_t dim, bool stable,
                        const Builder::RegionBody& less);
// stablehlo.while: state = init; while (cond(state)) state = body(state). Both regions get the
// state's values (regions capture nothing: every value they use comes through the state); cond
// returns one 0-d i1, body the next state in the types of `init`. Returns the final state.
std::vector<Value> while_loop(Builder& b, const std::vector<Value>& init, const Builder::RegionBody& cond,
                              const Builder::RegionBody& body);

// --- linear algebra, transforms, random bits --------------------------------------------------
// Which op(a) stablehlo.triangular_solve solves with: a, its transpose, or its adjoint.
enum class TriangularOp { NoTranspose, Transpose, Adjoint };
// op(a) x = rhs (left) or x op(a) = rhs (right); a is square with rhs's batch dimensions, only its
// `lower` (or upper) triangle is read. The result has rhs's type.
Value triangular_solve(Builder& b, const Value& a, const Value& rhs, bool left, bool lower,
                       bool unit_diagonal, TriangularOp op);
// stablehlo.fft over the last lengths.size() (at most three) dimensions of x, of the signal sizes
// `lengths`. FFT / IFFT keep x's complex type; RFFT takes a real x (f32 or f64) and keeps
// lengths.back() / 2 + 1 entries of the last dimension, complex; IRFFT takes those and returns the
// real signal, lengths.back() entries.
enum class FftType { Fft, Ifft, Rfft, Irfft };
Value fft(Builder& b, const Value& x, FftType type, const std::vector<int64_t>& lengths);
// stablehlo.rng_bit_generator (THREE_FRY) from `state`: (next state, random bits of `dtype` and
// `shape`).
std::pair<Value, Value> rng_bit_generator(Builder& b, const Value& state, DType dtype, const Shape& shape);

// 0-d i1: every element of integer `index` lies in [-size, size).
Value indices_in_range(Builder& b, const Value& index, int64_t size);
// Normalises a possibly negative dimension index.
int64_t wrap_dim(int64_t dim, int64_t rank);
Type with_dtype(const Type& t, DType dtype);

}  // namespace tpu::lowering::hlo
