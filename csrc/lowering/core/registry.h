// The lowering registry: one pure function per ATen op, IR values in, IR values out.
//
// A lowering declares the schema arguments it reads (a Signature: `reads({"self", "mat1"})`) and
// reads them by name (`c.tensor("mat1")`); the names are checked against the operator's schema
// when it is bound, so a misspelt or renamed argument fails at import (debug builds) or in
// tests/test_build.py, never silently. Tensor arguments arrive as IR values of their logical
// shape and dtype. Python scalars and `float` arguments arrive as 0-d runtime values (so a
// changing learning rate never recompiles) unless the lowering declares them static
// (`reads({"self"}, {"p"})`), in which case their host value is part of the compile-cache key and
// is readable through Arg::d / Arg::i. Output types (shape and dtype) were already computed by
// PyTorch's meta kernels and are given in Ctx::out_types: a lowering never re-derives them.
//
// Returned values: one per tensor written by the op (a mutated argument, flattened across lists,
// in schema order) followed by one per non-aliasing tensor return. For functional ops that is
// simply one per return; their in-place (`add_`) and `out=` variants reuse the same lowering.
#pragma once
#include <cstdint>
#include <initializer_list>
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "ir/builder.h"
#include "lowering/core/dynamic.h"

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
  // Padded execution (lowering/core/dynamic.h): the real sizes of the value's dynamic dimensions
  // (empty when it has none), per entry for a TensorList.
  Dims dims;
  std::vector<Dims> list_dims;
  bool is_none() const { return kind == Kind::None; }
};

// The Python exception a failed runtime check raises: the one CPU raises for the same input.
// Carried as the first character of the check's message (exec::CheckFailure splits it off).
enum class CheckError : char { Runtime = 'R', Index = 'I', LinAlg = 'L' };

struct Lowering;

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

  const Lowering* lowering = nullptr;  // whose schema the by-name accessors resolve names in
  // Padded execution: per returned value, the real sizes of its dynamic dimensions (its type
  // holds their bounds); empty when no result is dynamic.
  std::vector<Dims> out_dims = {};

  const ir::Type& out(int k = 0) const { return out_types.at(k); }
  // The dynamic dimensions of a tensor argument / of result k (empty when static).
  const Dims& dims(std::string_view name) const { return at(index(name)).dims; }
  Dims out_dims_of(int k) const { return k < static_cast<int>(out_dims.size()) ? out_dims[k] : Dims{}; }

  // Arguments by schema name ("mat1"), which the lowering must declare (Signature): reading an
  // undeclared name throws. An optional argument that was not passed counts as absent (has()).
  int index(std::string_view name) const;
  const Arg& arg(std::string_view name) const { return at(index(name)); }
  const ir::Value& tensor(std::string_view name) const { return at(index(name)).value; }
  bool has(std::string_view name) const;
  int64_t int_arg(std::string_view name) const { return at(index(name)).i; }
  const std::vector<int64_t>& ints(std::string_view name) const { return at(index(name)).ints; }
  bool bool_arg(std::string_view name) const { return at(index(name)).i != 0; }
  // Of the names one lowering reads under several overloads (`other`, `scalar`, `scalars`), the
  // one this overload declares.
  std::string_view declared_one_of(std::initializer_list<std::string_view> names) const;

 private:
  const Arg& at(int i) const { return args.at(i); }
};

using LowerFn = std::vector<ir::Value> (*)(Ctx&);

// The schema arguments a lowering reads by name, and the scalar arguments whose host value is a
// compile-time constant (part of the compile-cache key, readable as Arg::d / Arg::i). Checked
// against the operator's schema when the lowering is bound (aten/register.cpp).
struct Signature {
  std::vector<std::string> reads;
  std::vector<std::string> statics;
};
// TPU_LOWERING("aten::addmm", lower_addmm, reads({"self", "mat1", "mat2", "beta", "alpha"}));
// statics are read by name too and need not be repeated in `names`.
inline Signature reads(std::vector<std::string> names, std::vector<std::string> statics = {}) {
  return Signature{std::move(names), std::move(statics)};
}

struct Lowering {
  std::string name;  // "aten::add.Tensor"
  LowerFn fn = nullptr;
  uint32_t static_args = 0;  // bit i: argument i is static (from signature.statics)
  bool random = false;       // needs Ctx::rng_state even without a Generator argument
  Signature signature = {};
  std::vector<std::string> schema_args = {};  // the operator's argument names, set when bound
  // The source file that registered it: ops of lowering/elementwise and lowering/special are
  // pointwise on padded values (lowering/core/pad_rules.cpp).
  std::string file = {};
};

// Lowerings by name. TPU_LOWERING fills the process's registry(); tests fill scratch ones.
class Registry {
 public:
  // Throws on a second lowering of the same name. torch_tpu:: ops, which have no dispatcher
  // schema, are bound to their declared names (in order) here.
  void add(const Lowering& lowering);
  // nullptr when no lowering exists for `name` ("aten::add.Tensor").
  const Lowering* find(const std::string& name) const;
  std::vector<const Lowering*> all() const;
  // Records the operator's argument names for `name`'s lowering and sets its static_args from
  // the declared statics; returns the declared names the schema does not have.
  std::vector<std::string> bind_schema(const std::string& name, const std::vector<std::string>& schema_args);

 private:
  std::map<std::string, Lowering> lowerings_;
};

Registry& registry();
void register_lowering(const Lowering& lowering);  // registry().add
const Lowering* find_lowering(const std::string& name);
std::vector<const Lowering*> all_lowerings();

struct Registrar {
  Registrar(const char* file, const char* name, LowerFn fn, Signature signature, bool random = false) {
    register_lowering(Lowering{name, fn, 0, random, std::move(signature), {}, file});
  }
};

#define TPU_CONCAT_INNER(a, b) a##b
#define TPU_CONCAT(a, b) TPU_CONCAT_INNER(a, b)
// TPU_LOWERING("aten::mm", lower_mm, reads({"self", "mat2"}));
#define TPU_LOWERING(name, ...) \
  static ::tpu::lowering::Registrar TPU_CONCAT(tpu_lowering_, __COUNTER__)(__FILE__, name, __VA_ARGS__)

}  // namespace tpu::lowering
