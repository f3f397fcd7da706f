// Element types of IR values, independent of torch and of PJRT.
#pragma once
#include <cstdint>
#include <string>

namespace tpu::ir {

// The float8 types are storage types: PyTorch computes almost nothing in them, and conversions
// to and from them are emitted bit by bit (lowering/float8.cpp) to round exactly as c10 does.
enum class DType : uint8_t {
  Bool,
  U8,
  I8,
  I16,
  I32,
  I64,
  F16,
  BF16,
  F32,
  F64,
  C64,
  C128,
  U16,
  U32,
  U64,
  F8E4M3FN,
  F8E5M2,
  F8E4M3FNUZ,
  F8E5M2FNUZ,
  F8E8M0FNU,
};
// The last enumerator (serialized dtypes are checked against it).
inline constexpr DType kLastDType = DType::F8E8M0FNU;

bool is_floating(DType t);  // includes the float8 types, as torch.is_floating_point
bool is_float8(DType t);
bool is_complex(DType t);
bool is_integral(DType t);  // excludes Bool
bool is_unsigned(DType t);  // Bool counts as unsigned
int itemsize(DType t);
const char* mlir_name(DType t);  // i1, ui8, i8, ..., bf16, f32, complex<f32>
// PyTorch's ScalarType name (Bool, Byte, Char, ..., BFloat16, Float, ComplexFloat), the word
// its "... not implemented for 'Float'" errors use.
const char* torch_name(DType t);
// Real element type of a complex type (identity otherwise).
DType real_type(DType t);

}  // namespace tpu::ir
