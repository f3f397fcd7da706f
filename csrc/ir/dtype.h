// Element types of IR values, independent of torch and of PJRT.
#pragma once
#include <cstdint>
#include <string>

namespace tpu::ir {

enum class DType : uint8_t { Bool, U8, I8, I16, I32, I64, F16, BF16, F32, F64, C64, C128, U16, U32, U64 };

bool is_floating(DType t);
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
