// The lowering registry: one pure function per ATen op, IR values in, IR values out.
//
// A lowering sees the op's schema arguments in order (Ctx::arg). Tensor arguments arrive as IR
// values of their logical shape and dtype. Python scalars and `float` arguments arrive as 0-d
// runtime values (so a changing learning rate never recompiles) unless the lowering lists them
// in `static_args`, in which case their host value is part of the compile-cache key and is
// readable through Arg::d / Arg::i. Output types (shape and dtype) were already computed by
// PyTorch's meta kernels and are given in Ctx::out_types: a lowering never re-derives them.
//
// Returned values: one per tensor written by the op (a mutated argument, flattened across lists,
// in schema order) followed by one per non-aliasing tensor return. For functional ops that is
// simply one per return; their in-place (`add_`) and `out=` variants reuse the same lowering.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "ir/builder.h"

namespace tpu::lowering {

struct Arg {
  enum class Kind : uint8_t {
    None,
    Tensor,
    TensorList,
    Scalar,
    Int,
    IntList,
    Bool,
    String,
    ScalarType,
    Other
  };
  Kind kind = Kind::None;
  ir::Value value;                 // Tensor, or Scalar (0-d runtime value: f64, i64, i1 or c128)
  std::vector<ir::Value> values;   // TensorList (an invalid Value stands for a None entry)
  std::vector<bool> list_present;  // TensorList: which entries are present (Tensor?[] lists)
  int64_t i = 0;                   // Int, Bool, ScalarType (as ir::DType), static integer Scalar
  double d = 0;                    // static floating Scalar
  std::vector<int64_t> ints;       // IntList
  std::string s;                   // String
  // Scalar: the category used by type promotion. A 0-d tensor wrapped from a Python number
  // also counts as a scalar for promotion.
  bool wrapped_number = false;
  bool is_none() const { return kind == Kind::None; }
};

// The Python exception a failed runtime check raises: the one CPU raises for the same input.
// Carried as the first character of the check's message (exec::CheckFailure splits it off).
enum class CheckError : char { Runtime = 'R', Index = 'I', LinAlg = 'L' };

struct Ctx {
  ir::Builder& b;
  std::vector<Arg> args;
  std::vector<ir::Type> out_types;  // one per returned value, see the header comment
  ir::Value rng_state;              // ui64[2] (seed, offset) when the op is random
  // Runtime checks: 0-d i1 values that must be true (e.g. indices in range), each with the
  // error to raise otherwise. Checked after the op in debug mode, at the next sync in strict
  // mode (as CUDA reports device-side asserts). The message starts with the CheckError's code.
  std::vector<std::pair<ir::Value, std::string>> checks;
  void require(const ir::Value& ok, const std::string& message, CheckError kind = CheckError::Runtime) {
    checks.emplace_back(ok, static_cast<char>(kind) + message);
  }

  const Arg& arg(int i) const { return args.at(i); }
  const ir::Value& tensor(int i) const { return args.at(i).value; }
  bool has(int i) const { return i < static_cast<int>(args.size()) && !args[i].is_none(); }
  int64_t int_arg(int i) const { return args.at(i).i; }
  const std::vector<int64_t>& ints(int i) const { return args.at(i).ints; }
  bool bool_arg(int i) const { return args.at(i).i != 0; }
  const ir::Type& out(int k = 0) const { return out_types.at(k); }
};

using LowerFn = std::vector<ir::Value> (*)(Ctx&);

struct Lowering {
  std::string name;  // "aten::add.Tensor"
  LowerFn fn = nullptr;
  uint32_t static_args = 0;  // bit i: argument i's scalar value is compile-time
  bool random = false;       // needs Ctx::rng_state even without a Generator argument
};

void register_lowering(const Lowering& lowering);
// nullptr when no lowering exists for `name` ("aten::add.Tensor").
const Lowering* find_lowering(const std::string& name);
std::vector<const Lowering*> all_lowerings();

struct Registrar {
  Registrar(const char* name, LowerFn fn, uint32_t static_args = 0, bool random = false) {
    register_lowering(Lowering{name, fn, static_args, random});
  }
};

#define TPU_CONCAT_INNER(a, b) a##b
#define TPU_CONCAT(a, b) TPU_CONCAT_INNER(a, b)
// TPU_LOWERING("aten::add.Tensor", lower_add);
#define TPU_LOWERING(name, ...) \
  static ::tpu::lowering::Registrar TPU_CONCAT(tpu_lowering_, __COUNTER__)(name, __VA_ARGS__)

}  // namespace tpu::lowering
