#include "lowering/core/hlo.h"

#include "lowering/core/float8.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <stdexcept>

namespace tpu::lowering::hlo {

namespace {

std::string float_literal(double v) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.17g", v);
  std::string s = buf;
  // MLIR float literals need a '.': "1e-50" must be spelled "1.0e-50".
  if (s.find('.') == std::string::npos) {
    size_t e = s.find_first_of("eE");
    s.insert(e == std::string::npos ? s.size() : e, ".0");
  }
  return s;
}

Type scalar_type(DType dtype) { return Type{dtype, {}}; }

}  // namespace

int64_t wrap_dim(int64_t dim, int64_t rank) {
  int64_t r = rank == 0 ? 1 : rank;
  if (dim < -r || dim >= r)
    throw std::out_of_range("Dimension out of range (expected to be in range of [" + std::to_string(-r) +
                            ", " + std::to_string(r - 1) + "], but got " + std::to_string(dim) + ")");
  return dim < 0 ? dim + r : dim;
}

Type with_dtype(const Type& t, DType dtype) { return Type{dtype, t.shape}; }

Value constant(Builder& b, DType dtype, double v) {
  if (dtype == DType::Bool) return constant_int(b, dtype, v != 0);
  if (ir::is_integral(dtype)) return constant_int(b, dtype, static_cast<int64_t>(v));
  if (ir::is_complex(dtype)) {
    Value re = constant(b, ir::real_type(dtype), v);
    Value im = constant(b, ir::real_type(dtype), 0);
    return complex(b, re, im);
  }
  // A float8 literal would be rounded by the MLIR parser, not as c10 rounds a Scalar.
  if (ir::is_float8(dtype)) return convert(b, constant(b, DType::F64, v), dtype);
  if (!std::isfinite(v)) {
    // Non-finite literals need the hex form; spell them in f64 and convert.
    uint64_t bits;
    std::memcpy(&bits, &v, sizeof bits);
    char buf[32];
    std::snprintf(buf, sizeof buf, "0x%016llX", static_cast<unsigned long long>(bits));
    Value c = b.op1("stablehlo.constant", {}, scalar_type(DType::F64),
                    std::string("value = dense<") + buf + "> : tensor<f64>");
    return convert(b, c, dtype);
  }
  return b.op1("stablehlo.constant", {}, scalar_type(dtype),
               "value = dense<" + float_literal(v) + "> : " + scalar_type(dtype).str());
}

Value i64_vector(Builder& b, const std::vector<int64_t>& v) {
  Type t{DType::I64, {static_cast<int64_t>(v.size())}};
  return b.op1("stablehlo.constant", {}, t, "value = dense<" + ir::i64_list(v) + "> : " + t.str());
}

Value float_vector(Builder& b, const std::vector<double>& v, DType dtype) {
  Type t{dtype, {static_cast<int64_t>(v.size())}};
  std::string lit = "[";
  for (size_t i = 0; i < v.size(); ++i) lit += (i ? ", " : "") + float_literal(v[i]);
  return b.op1("stablehlo.constant", {}, t, "value = dense<" + lit + "]> : " + t.str());
}

namespace {

// The literal of integer (or bool) `v` in `dtype`.
std::string int_literal(DType dtype, int64_t v) {
  if (dtype == DType::Bool) return v ? "true" : "false";
  if (ir::is_unsigned(dtype) && v < 0) {
    // Wraps modulo 2^bits, as a C++ (and PyTorch) cast does: -1 -> 255 for ui8.
    uint64_t u = static_cast<uint64_t>(v);
    int bits = 8 * ir::itemsize(dtype);
    if (bits < 64) u &= (uint64_t{1} << bits) - 1;
    return std::to_string(u);
  }
  return std::to_string(v);
}

}  // namespace

Value constant_int(Builder& b, DType dtype, int64_t v) {
  if (!ir::is_integral(dtype) && dtype != DType::Bool) return constant(b, dtype, static_cast<double>(v));
  return b.op1("stablehlo.constant", {}, scalar_type(dtype),
               "value = dense<" + int_literal(dtype, v) + "> : " + scalar_type(dtype).str());
}

Value full_int(Builder& b, const Type& type, int64_t v) {
  if (!ir::is_integral(type.dtype) && type.dtype != DType::Bool) return full(b, type, static_cast<double>(v));
  return b.op1("stablehlo.constant", {}, type,
               "value = dense<" + int_literal(type.dtype, v) + "> : " + type.str());
}

Value full(Builder& b, const Type& type, double v) {
  return broadcast_in_dim(b, constant(b, type.dtype, v), type.shape, {});
}

Value convert(Builder& b, const Value& v, DType dtype) {
  if (v.dtype() == dtype) return v;
  if (dtype == DType::Bool && ir::is_complex(v.dtype())) return compare(b, v, full(b, v.type, 0), "NE");
  if (ir::is_complex(v.dtype()) && !ir::is_complex(dtype)) {
    return convert(b, real(b, v), dtype);
  }
  // float8 conversions round as c10's do, not as XLA's (lowering/core/float8.h).
  if (ir::is_float8(v.dtype()) || ir::is_float8(dtype)) return float8::convert(b, v, dtype);
  return xla_convert(b, v, dtype);
}

Value reshape(Builder& b, const Value& v, const Shape& shape) {
  if (v.shape() == shape) return v;
  return b.op1("stablehlo.reshape", {v}, Type{v.dtype(), shape});
}

Value transpose(Builder& b, const Value& v, const std::vector<int64_t>& perm) {
  bool identity = true;
  for (size_t i = 0; i < perm.size(); ++i) identity &= perm[i] == static_cast<int64_t>(i);
  if (identity) return v;
  Shape shape;
  for (int64_t p : perm) shape.push_back(v.shape()[p]);
  return b.op1("stablehlo.transpose", {v}, Type{v.dtype(), shape}, "permutation = " + ir::i64_array(perm));
}

Value broadcast_in_dim(Builder& b, const Value& v, const Shape& shape, const std::vector<int64_t>& dims) {
  if (v.shape() == shape) {
    bool identity = true;
    for (size_t i = 0; i < dims.size(); ++i) identity &= dims[i] == static_cast<int64_t>(i);
    if (identity) return v;
  }
  return b.op1("stablehlo.broadcast_in_dim", {v}, Type{v.dtype(), shape},
               "broadcast_dimensions = " + ir::i64_array(dims));
}

bool broadcastable(const Shape& from, const Shape& to) {
  if (from.size() > to.size()) return false;
  const size_t offset = to.size() - from.size();
  for (size_t i = 0; i < from.size(); ++i)
    if (from[i] != 1 && from[i] != to[i + offset]) return false;
  return true;
}

std::string shape_str(const Shape& shape) {
  std::string s = "[";
  for (size_t i = 0; i < shape.size(); ++i) s += (i ? ", " : "") + std::to_string(shape[i]);
  return s + "]";
}

Value broadcast_to(Builder& b, const Value& v, const Shape& shape) {
  if (v.shape() == shape) return v;
  if (!broadcastable(v.shape(), shape))
    throw std::invalid_argument("broadcast_to: shape " + shape_str(v.shape()) + " cannot be broadcast to " +
                                shape_str(shape));
  int64_t offset = static_cast<int64_t>(shape.size()) - v.rank();
  Shape kept;
  std::vector<int64_t> kept_dims;
  for (int i = 0; i < v.rank(); ++i) {
    // Size-1 dimensions that broadcast are dropped first, so broadcast_in_dim sees exact sizes.
    if (v.shape()[i] == shape[i + offset]) {
      kept.push_back(v.shape()[i]);
      kept_dims.push_back(i + offset);
    }
  }
  Value src = reshape(b, v, kept);
  return broadcast_in_dim(b, src, shape, kept_dims);
}

Value slice(Builder& b, const Value& v, const std::vector<int64_t>& start, const std::vector<int64_t>& limit,
            const std::vector<int64_t>& strides_in) {
  std::vector<int64_t> strides = strides_in.empty() ? std::vector<int64_t>(v.rank(), 1) : strides_in;
  Shape shape;
  bool identity = true;
  for (int i = 0; i < v.rank(); ++i) {
    int64_t n = limit[i] > start[i] ? (limit[i] - start[i] + strides[i] - 1) / strides[i] : 0;
    shape.push_back(n);
    identity &= start[i] == 0 && limit[i] == v.shape()[i] && strides[i] == 1;
  }
  if (identity) return v;
  return b.op1("stablehlo.slice", {v}, Type{v.dtype(), shape},
               "start_indices = " + ir::i64_array(start) + ", limit_indices = " + ir::i64_array(limit) +
                   ", strides = " + ir::i64_array(strides));
}

Value slice_dim(Builder& b, const Value& v, int dim, int64_t start, int64_t limit, int64_t step) {
  std::vector<int64_t> s(v.rank(), 0), l(v.shape()), st(v.rank(), 1);
  s[dim] = start;
  l[dim] = limit;
  st[dim] = step;
  return slice(b, v, s, l, st);
}

Value concatenate(Builder& b, const std::vector<Value>& vs, int64_t dim) {
  if (vs.size() == 1) return vs[0];
  Shape shape = vs[0].shape();
  shape[dim] = 0;
  for (const Value& v : vs) shape[dim] += v.shape()[dim];
  return b.op1("stablehlo.concatenate", vs, Type{vs[0].dtype(), shape},
               "dimension = " + std::to_string(dim) + " : i64");
}

Value pad(Builder& b, const Value& v, const Value& pad_value, const std::vector<int64_t>& low,
          const std::vector<int64_t>& high, const std::vector<int64_t>& interior_in) {
  std::vector<int64_t> interior = interior_in.empty() ? std::vector<int64_t>(v.rank(), 0) : interior_in;
  Shape shape;
  for (int i = 0; i < v.rank(); ++i) {
    int64_t n = v.shape()[i];
    shape.push_back(low[i] + high[i] + n + (n > 0 ? (n - 1) * interior[i] : 0));
  }
  return b.op1("stablehlo.pad", {v, pad_value}, Type{v.dtype(), shape},
               "edge_padding_low = " + ir::i64_array(low) + ", edge_padding_high = " + ir::i64_array(high) +
                   ", interior_padding = " + ir::i64_array(interior));
}

Value iota(Builder& b, const Type& type, int64_t dim) {
  return b.op1("stablehlo.iota", {}, type, "iota_dimension = " + std::to_string(dim) + " : i64");
}

Value reverse(Builder& b, const Value& v, const std::vector<int64_t>& dims) {
  if (dims.empty()) return v;
  return b.op1("stablehlo.reverse", {v}, v.type, "dimensions = " + ir::i64_array(dims));
}

Value dynamic_slice(Builder& b, const Value& v, const std::vector<Value>& starts,
                    const std::vector<int64_t>& sizes) {
  std::vector<Value> operands{v};
  operands.insert(operands.end(), starts.begin(), starts.end());
  return b.op1("stablehlo.dynamic_slice", operands, Type{v.dtype(), sizes},
               "slice_sizes = " + ir::i64_array(sizes));
}

Value dynamic_update_slice(Builder& b, const Value& v, const Value& update,
                           const std::vector<Value>& starts) {
  std::vector<Value> operands{v, update};
  operands.insert(operands.end(), starts.begin(), starts.end());
  return b.op1("stablehlo.dynamic_update_slice", operands, v.type);
}

Value scalar_like(Builder& b, const Value& x, double v) { return full(b, x.type, v); }

std::vector<Value> reduce_multi(Builder& b, const std::vector<Value>& xs, const std::vector<Value>& inits,
                                const std::vector<int64_t>& dims, const Builder::RegionBody& body) {
  Shape out_shape;
  for (int i = 0; i < xs[0].rank(); ++i) {
    bool reduced = false;
    for (int64_t d : dims) reduced |= d == i;
    if (!reduced) out_shape.push_back(xs[0].shape()[i]);
  }
  std::vector<Value> operands = xs;
  operands.insert(operands.end(), inits.begin(), inits.end());
  std::vector<Type> results, region_args;
  for (const Value& x : xs) results.push_back(Type{x.dtype(), out_shape});
  for (const Value& x : xs) region_args.push_back(Type{x.dtype(), {}});
  for (const Value& x : xs) region_args.push_back(Type{x.dtype(), {}});
  return b.op_with_region("stablehlo.reduce", operands, results, "dimensions = " + ir::i64_array(dims),
                          region_args, body);
}

Value reduce(Builder& b, const Value& x, const Value& init, const std::vector<int64_t>& dims, Combiner op) {
  return reduce_multi(b, {x}, {init}, dims, combiner_body(op))[0];
}

Value indices_in_range(Builder& b, const Value& index, int64_t size) {
  Value lo = compare(b, index, full(b, index.type, static_cast<double>(-size)), "GE");
  Value hi = compare(b, index, full(b, index.type, static_cast<double>(size)), "LT");
  Value ok = and_(b, lo, hi);
  std::vector<int64_t> dims(ok.rank());
  for (int i = 0; i < ok.rank(); ++i) dims[i] = i;
  return reduce(b, ok, constant_int(b, DType::Bool, 1), dims, Combiner::And);
}

Value dot_general(Builder& b, const Value& lhs, const Value& rhs, const std::vector<int64_t>& lhs_batch,
                  const std::vector<int64_t>& rhs_batch, const std::vector<int64_t>& lhs_contract,
                  const std::vector<int64_t>& rhs_contract, DType out_dtype) {
  Shape shape;
  for (int64_t d : lhs_batch) shape.push_back(lhs.shape()[d]);
  auto free_dims = [&](const Value& v, const std::vector<int64_t>& batch,
                       const std::vector<int64_t>& contract) {
    for (int i = 0; i < v.rank(); ++i) {
      bool used = false;
      for (int64_t d : batch) used |= d == i;
      for (int64_t d : contract) used |= d == i;
      if (!used) shape.push_back(v.shape()[i]);
    }
  };
  free_dims(lhs, lhs_batch, lhs_contract);
  free_dims(rhs, rhs_batch, rhs_contract);
  std::string attrs =
      "dot_dimension_numbers = #stablehlo.dot<lhs_batching_dimensions = " + ir::i64_list(lhs_batch) +
      ", rhs_batching_dimensions = " + ir::i64_list(rhs_batch) +
      ", lhs_contracting_dimensions = " + ir::i64_list(lhs_contract) +
      ", rhs_contracting_dimensions = " + ir::i64_list(rhs_contract) + ">";
  return b.op1("stablehlo.dot_general", {lhs, rhs}, Type{out_dtype, shape}, attrs);
}

namespace {

std::string padding_attr(const std::vector<std::pair<int64_t, int64_t>>& padding) {
  std::string s = "dense<[";
  for (size_t i = 0; i < padding.size(); ++i)
    s += std::string(i ? ", " : "") + "[" + std::to_string(padding[i].first) + ", " +
         std::to_string(padding[i].second) + "]";
  return s + "]> : tensor<" + std::to_string(padding.size()) + "x2xi64>";
}

std::vector<int64_t> ones_if_empty(const std::vector<int64_t>& v, size_t n) {
  return v.empty() ? std::vector<int64_t>(n, 1) : v;
}

// Size of a window-reduced dimension: `n` dilated by `ld`, padded, windows of `k` dilated by
// `rd` every `stride` (StableHLO's convolution / reduce_window shape rule).
int64_t window_out(int64_t n, int64_t ld, int64_t lo, int64_t hi, int64_t k, int64_t rd, int64_t stride) {
  int64_t dilated = n == 0 ? 0 : (n - 1) * ld + 1;
  int64_t padded = dilated + lo + hi;
  int64_t win = k == 0 ? 0 : (k - 1) * rd + 1;
  return padded < win ? 0 : (padded - win) / stride + 1;
}

}  // namespace

ConvDims ConvDims::nchw(int spatial) {
  ConvDims d;
  for (int i = 0; i < spatial; ++i) {
    d.input_spatial.push_back(2 + i);
    d.kernel_spatial.push_back(2 + i);
    d.output_spatial.push_back(2 + i);
  }
  return d;
}

Value convolution(Builder& b, const Value& lhs, const Value& rhs, const ConvDims& d, const ConvWindow& w,
                  DType out_dtype) {
  size_t n = d.input_spatial.size();
  std::vector<int64_t> strides = ones_if_empty(w.strides, n);
  std::vector<int64_t> ld = ones_if_empty(w.lhs_dilation, n), rd = ones_if_empty(w.rhs_dilation, n);
  std::vector<std::pair<int64_t, int64_t>> padding = w.padding;
  if (padding.empty()) padding.assign(n, {0, 0});
  Shape shape(n + 2);
  shape[d.output_batch] = lhs.shape()[d.input_batch] / w.batch_group_count;
  shape[d.output_feature] = rhs.shape()[d.kernel_output_feature];
  for (size_t i = 0; i < n; ++i)
    shape[d.output_spatial[i]] =
        window_out(lhs.shape()[d.input_spatial[i]], ld[i], padding[i].first, padding[i].second,
                   rhs.shape()[d.kernel_spatial[i]], rd[i], strides[i]);
  std::string dims = "#stablehlo.conv<raw input_batch_dimension = " + std::to_string(d.input_batch) +
                     ", input_feature_dimension = " + std::to_string(d.input_feature) +
                     ", input_spatial_dimensions = " + ir::i64_list(d.input_spatial) +
                     ", kernel_input_feature_dimension = " + std::to_string(d.kernel_input_feature) +
                     ", kernel_output_feature_dimension = " + std::to_string(d.kernel_output_feature) +
                     ", kernel_spatial_dimensions = " + ir::i64_list(d.kernel_spatial) +
                     ", output_batch_dimension = " + std::to_string(d.output_batch) +
                     ", output_feature_dimension = " + std::to_string(d.output_feature) +
                     ", output_spatial_dimensions = " + ir::i64_list(d.output_spatial) + ">";
  std::string attrs =
      "batch_group_count = " + std::to_string(w.batch_group_count) + " : i64, dimension_numbers = " + dims +
      ", feature_group_count = " + std::to_string(w.feature_group_count) +
      " : i64, lhs_dilation = " + ir::i64_array(ld) + ", padding = " + padding_attr(padding) +
      ", rhs_dilation = " + ir::i64_array(rd) + ", window_strides = " + ir::i64_array(strides);
  return b.op1("stablehlo.convolution", {lhs, rhs}, Type{out_dtype, shape}, attrs);
}

std::vector<Value> reduce_window(Builder& b, const std::vector<Value>& xs, const std::vector<Value>& inits,
                                 const std::vector<int64_t>& window, const std::vector<int64_t>& strides_in,
                                 const std::vector<std::pair<int64_t, int64_t>>& padding_in,
                                 const std::vector<int64_t>& dilation_in, const Builder::RegionBody& body) {
  size_t r = static_cast<size_t>(xs[0].rank());
  std::vector<int64_t> strides = ones_if_empty(strides_in, r), dilation = ones_if_empty(dilation_in, r);
  std::vector<std::pair<int64_t, int64_t>> padding = padding_in;
  if (padding.empty()) padding.assign(r, {0, 0});
  Shape shape(r);
  for (size_t i = 0; i < r; ++i)
    shape[i] = window_out(xs[0].shape()[i], 1, padding[i].first, padding[i].second, window[i], dilation[i],
                          strides[i]);
  std::vector<Value> operands = xs;
  operands.insert(operands.end(), inits.begin(), inits.end());
  std::vector<Type> results, region_args;
  for (const Value& x : xs) results.push_back(Type{x.dtype(), shape});
  for (int k = 0; k < 2; ++k)
    for (const Value& x : xs) region_args.push_back(Type{x.dtype(), {}});
  std::string attrs =
      "padding = " + padding_attr(padding) + ", window_dilations = " + ir::i64_array(dilation) +
      ", window_dimensions = " + ir::i64_array(window) + ", window_strides = " + ir::i64_array(strides);
  return b.op_with_region("stablehlo.reduce_window", operands, results, attrs, region_args, body);
}

namespace {

bool contains(const std::vector<int64_t>& v, int64_t x) {
  return std::find(v.begin(), v.end(), x) != v.end();
}

}  // namespace

Value gather(Builder& b, const Value& operand, const Value& indices, const GatherDims& d) {
  Shape batch;
  for (int i = 0; i < indices.rank(); ++i)
    if (i != d.index_vector_dim) batch.push_back(indices.shape()[i]);
  Shape offsets;
  for (int i = 0; i < operand.rank(); ++i)
    if (!contains(d.collapsed_slice_dims, i)) offsets.push_back(d.slice_sizes[i]);
  Shape shape;
  size_t bi = 0, oi = 0;
  for (size_t p = 0; p < batch.size() + offsets.size(); ++p)
    shape.push_back(contains(d.offset_dims, static_cast<int64_t>(p)) ? offsets[oi++] : batch[bi++]);
  std::string attrs = "dimension_numbers = #stablehlo.gather<offset_dims = " + ir::i64_list(d.offset_dims) +
                      ", collapsed_slice_dims = " + ir::i64_list(d.collapsed_slice_dims) +
                      ", start_index_map = " + ir::i64_list(d.start_index_map) +
                      ", index_vector_dim = " + std::to_string(d.index_vector_dim) +
                      ">, slice_sizes = " + ir::i64_array(d.slice_sizes) + ", indices_are_sorted = false";
  return b.op1("stablehlo.gather", {operand, indices}, Type{operand.dtype(), shape}, attrs);
}

Value scatter(Builder& b, const Value& operand, const Value& indices, const Value& updates,
              const ScatterDims& d, ScatterCombiner combine) {
  std::string attrs = "scatter_dimension_numbers = #stablehlo.scatter<update_window_dims = " +
                      ir::i64_list(d.update_window_dims) +
                      ", inserted_window_dims = " + ir::i64_list(d.inserted_window_dims) +
                      ", scatter_dims_to_operand_dims = " + ir::i64_list(d.scatter_dims_to_operand_dims) +
                      ", index_vector_dim = " + std::to_string(d.index_vector_dim) +
                      ">, indices_are_sorted = false, unique_indices = false";
  Type scalar{operand.dtype(), {}};
  return b.op_with_region("stablehlo.scatter", {operand, indices, updates}, {operand.type}, attrs,
                          {scalar, scalar},
                          [combine](Builder& rb, const std::vector<Value>& a) -> std::vector<Value> {
                            if (!combine) return {a[1]};
                            return {hlo::combine(rb, *combine, a[0], a[1])};
                          })[0];
}

std::vector<Value> sort(Builder& b, const std::vector<Value>& xs, int64_t dim, bool stable,
                        const Builder::RegionBody& less) {
  std::vector<Type> results, region_args;
  for (const Value& x : xs) {
    results.push_back(x.type);
    region_args.push_back(Type{x.dtype(), {}});
    region_args.push_back(Type{x.dtype(), {}});
  }
  return b.op_with_region(
      "stablehlo.sort", xs, results,
      "dimension = " + std::to_string(dim) + " : i64, is_stable = " + (stable ? "true" : "false"),
      region_args, less);
}

std::vector<Value> while_loop(Builder& b, const std::vector<Value>& init, const Builder::RegionBody& cond,
                              const Builder::RegionBody& body) {
  std::vector<Type> types;
  for (const Value& v : init) types.push_back(v.type);
  return b.op_with_regions("stablehlo.while", init, types, "", {{types, cond}, {types, body}});
}

Value triangular_solve(Builder& b, const Value& a, const Value& rhs, bool left, bool lower,
                       bool unit_diagonal, TriangularOp op) {
  const char* name = op == TriangularOp::NoTranspose ? "NO_TRANSPOSE"
                     : op == TriangularOp::Adjoint   ? "ADJOINT"
                                                     : "TRANSPOSE";
  std::string attrs = std::string("left_side = ") + (left ? "true" : "false") +
                      ", lower = " + (lower ? "true" : "false") +
                      ", unit_diagonal = " + (unit_diagonal ? "true" : "false") +
                      ", transpose_a = #stablehlo<transpose " + name + ">";
  return b.op1("stablehlo.triangular_solve", {a, rhs}, rhs.type, attrs);
}

Value fft(Builder& b, const Value& x, FftType type, const std::vector<int64_t>& lengths) {
  Type out = x.type;
  const char* name = "FFT";
  switch (type) {
    case FftType::Fft:
      break;
    case FftType::Ifft:
      name = "IFFT";
      break;
    case FftType::Rfft:
      name = "RFFT";
      if (x.dtype() != DType::F32 && x.dtype() != DType::F64)
        throw std::invalid_argument("stablehlo.fft: RFFT of " + x.type.str() + ", not f32 or f64");
      out.dtype = x.dtype() == DType::F64 ? DType::C128 : DType::C64;
      out.shape.back() = lengths.back() / 2 + 1;
      break;
    case FftType::Irfft:
      name = "IRFFT";
      out.dtype = ir::real_type(x.dtype());
      out.shape.back() = lengths.back();
      break;
  }
  return b.op1(
      "stablehlo.fft", {x}, out,
      std::string("fft_type = #stablehlo<fft_type ") + name + ">, fft_length = " + ir::i64_array(lengths));
}

std::pair<Value, Value> rng_bit_generator(Builder& b, const Value& state, DType dtype, const Shape& shape) {
  std::vector<Value> r = b.op("stablehlo.rng_bit_generator", {state}, {state.type, Type{dtype, shape}},
                              "rng_algorithm = #stablehlo<rng_algorithm THREE_FRY>");
  return {r[0], r[1]};
}

}  // namespace tpu::lowering::hlo
