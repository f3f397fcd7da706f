#include "ir/dtype.h"

namespace tpu::ir {

bool is_floating(DType t) {
  return t == DType::F16 || t == DType::BF16 || t == DType::F32 || t == DType::F64 || is_float8(t);
}
bool is_float8(DType t) {
  return t == DType::F8E4M3FN || t == DType::F8E5M2 || t == DType::F8E4M3FNUZ || t == DType::F8E5M2FNUZ ||
         t == DType::F8E8M0FNU;
}
bool is_complex(DType t) { return t == DType::C64 || t == DType::C128; }
bool is_integral(DType t) { return !is_floating(t) && !is_complex(t) && t != DType::Bool; }
bool is_unsigned(DType t) {
  return t == DType::Bool || t == DType::U8 || t == DType::U16 || t == DType::U32 || t == DType::U64;
}

int itemsize(DType t) {
  switch (t) {
    case DType::Bool:
    case DType::U8:
    case DType::I8:
    case DType::F8E4M3FN:
    case DType::F8E5M2:
    case DType::F8E4M3FNUZ:
    case DType::F8E5M2FNUZ:
    case DType::F8E8M0FNU:
      return 1;
    case DType::I16:
    case DType::U16:
    case DType::F16:
    case DType::BF16:
      return 2;
    case DType::I32:
    case DType::U32:
    case DType::F32:
      return 4;
    case DType::I64:
    case DType::U64:
    case DType::F64:
    case DType::C64:
      return 8;
    case DType::C128:
      return 16;
  }
  return 0;
}

const char* mlir_name(DType t) {
  switch (t) {
    case DType::Bool:
      return "i1";
    case DType::U8:
      return "ui8";
    case DType::I8:
      return "i8";
    case DType::I16:
      return "i16";
    case DType::I32:
      return "i32";
    case DType::I64:
      return "i64";
    case DType::U16:
      return "ui16";
    case DType::U32:
      return "ui32";
    case DType::U64:
      return "ui64";
    case DType::F16:
      return "f16";
    case DType::BF16:
      return "bf16";
    case DType::F32:
      return "f32";
    case DType::F64:
      return "f64";
    case DType::C64:
      return "complex<f32>";
    case DType::C128:
      return "complex<f64>";
    case DType::F8E4M3FN:
      return "f8E4M3FN";
    case DType::F8E5M2:
      return "f8E5M2";
    case DType::F8E4M3FNUZ:
      return "f8E4M3FNUZ";
    case DType::F8E5M2FNUZ:
      return "f8E5M2FNUZ";
    case DType::F8E8M0FNU:
      return "f8E8M0FNU";
  }
  return "?";
}

const char* torch_name(DType t) {
  switch (t) {
    case DType::Bool:
      return "Bool";
    case DType::U8:
      return "Byte";
    case DType::I8:
      return "Char";
    case DType::I16:
      return "Short";
    case DType::I32:
      return "Int";
    case DType::I64:
      return "Long";
    case DType::U16:
      return "UInt16";
    case DType::U32:
      return "UInt32";
    case DType::U64:
      return "UInt64";
    case DType::F16:
      return "Half";
    case DType::BF16:
      return "BFloat16";
    case DType::F32:
      return "Float";
    case DType::F64:
      return "Double";
    case DType::C64:
      return "ComplexFloat";
    case DType::C128:
      return "ComplexDouble";
    case DType::F8E4M3FN:
      return "Float8_e4m3fn";
    case DType::F8E5M2:
      return "Float8_e5m2";
    case DType::F8E4M3FNUZ:
      return "Float8_e4m3fnuz";
    case DType::F8E5M2FNUZ:
      return "Float8_e5m2fnuz";
    case DType::F8E8M0FNU:
      return "Float8_e8m0fnu";
  }
  return "?";
}

DType real_type(DType t) {
  if (t == DType::C64) return DType::F32;
  if (t == DType::C128) return DType::F64;
  return t;
}

}  // namespace tpu::ir
