#include "lowering/core/promotion.h"

#include <optional>

namespace tpu::lowering {

using ir::DType;

namespace {

int int_rank(DType t) {
  switch (t) {
    case DType::I8:
    case DType::U8:
      return 1;
    case DType::I16:
    case DType::U16:
      return 2;
    case DType::I32:
    case DType::U32:
      return 3;
    default:
      return 4;
  }
}

DType signed_of_rank(int r) {
  return r == 1 ? DType::I8 : r == 2 ? DType::I16 : r == 3 ? DType::I32 : DType::I64;
}

DType complex_of(DType t) { return t == DType::F64 ? DType::C128 : DType::C64; }

}  // namespace

DType promote_types(DType a, DType b) {
  if (a == b) return a;
  if (a == DType::Bool) return b;
  if (b == DType::Bool) return a;
  if (ir::is_complex(a) || ir::is_complex(b)) {
    bool wide = a == DType::C128 || b == DType::C128 || a == DType::F64 || b == DType::F64;
    return wide ? DType::C128 : DType::C64;
  }
  if (ir::is_floating(a) && ir::is_floating(b)) {
    if ((a == DType::F16 && b == DType::BF16) || (a == DType::BF16 && b == DType::F16)) return DType::F32;
    return ir::itemsize(a) >= ir::itemsize(b) ? a : b;
  }
  if (ir::is_floating(a)) return a;
  if (ir::is_floating(b)) return b;
  // Both integral.
  bool ua = ir::is_unsigned(a), ub = ir::is_unsigned(b);
  if (ua == ub) return int_rank(a) >= int_rank(b) ? a : b;
  DType u = ua ? a : b, s = ua ? b : a;
  if (int_rank(s) > int_rank(u)) return s;
  return signed_of_rank(std::min(int_rank(u) + 1, 4));
}

DType to_floating(DType t) { return ir::is_floating(t) || ir::is_complex(t) ? t : DType::F32; }

namespace {

std::optional<DType> combine(std::optional<DType> higher, std::optional<DType> lower) {
  if (!higher) return lower;
  if (!lower) return higher;
  DType h = *higher, l = *lower;
  if (ir::is_complex(h)) return h;
  if (ir::is_complex(l)) return ir::is_floating(h) ? complex_of(h) : l;
  if (ir::is_floating(h)) return h;
  if (h == DType::Bool || ir::is_floating(l)) return promote_types(h, l);
  return h;
}

void update(std::optional<DType>& state, DType t) { state = state ? promote_types(*state, t) : t; }

}  // namespace

DType result_type(const std::vector<const Arg*>& args) {
  std::optional<DType> dim, zero, wrapped;
  for (const Arg* a : args) {
    if (a->kind == Arg::Kind::TensorList) {
      for (const ir::Value& v : a->values)
        if (v.valid()) update(v.rank() > 0 ? dim : zero, v.dtype());
      continue;
    }
    if (a->kind != Arg::Kind::Tensor && a->kind != Arg::Kind::Scalar) continue;
    DType t = a->value.dtype();
    if (a->wrapped_number || a->kind == Arg::Kind::Scalar) {
      // Wrapped Python numbers count with the default dtype of their category.
      if (ir::is_complex(t))
        t = DType::C64;
      else if (ir::is_floating(t))
        t = DType::F32;
      update(wrapped, t);
    } else if (a->value.rank() == 0) {
      update(zero, t);
    } else {
      update(dim, t);
    }
  }
  auto r = combine(dim, combine(zero, wrapped));
  return r ? *r : DType::F32;
}

DType result_type(const Ctx& ctx, const std::vector<std::string_view>& names) {
  std::vector<const Arg*> args;
  for (std::string_view name : names)
    if (ctx.has(name)) args.push_back(&ctx.arg(name));
  return result_type(args);
}

}  // namespace tpu::lowering
