#include "exec/op_call.h"

#include <cstring>

namespace tpu::exec {

namespace {

void put_ints(std::string& k, const std::vector<int64_t>& v) {
  append_bytes(k, static_cast<uint32_t>(v.size()));
  k.append(reinterpret_cast<const char*>(v.data()), v.size() * sizeof(int64_t));
}

}  // namespace

ir::DType storage_dtype(const OpCall& call, int storage) {
  const Storage* s = call.storages[storage];
  if (s->defined) return s->dtype;
  for (const TensorView& v : call.views)
    if (v.storage == storage) return v.dtype;
  return ir::DType::F32;
}

int64_t storage_numel(const OpCall& call, int storage) {
  return call.storages[storage]->numel_as(storage_dtype(call, storage));
}

namespace {

std::string call_key(const OpCall& call, bool with_shapes) {
  std::string k;
  k.reserve(256);
  append_bytes(k, call.lowering);
  append_bytes(k, static_cast<uint8_t>(call.random));
  append_bytes(k, static_cast<uint32_t>(call.storages.size()));
  for (size_t s = 0; s < call.storages.size(); ++s) {
    const Storage* st = call.storages[s];
    append_bytes(k, storage_dtype(call, static_cast<int>(s)));
    append_bytes(k, static_cast<uint8_t>(st->defined));
    if (!with_shapes) continue;
    append_bytes(k, storage_numel(call, static_cast<int>(s)));
    if (st->padded) {  // a padded buffer is a different parameter than a flat one
      put_ints(k, st->padded->bounds);
      put_ints(k, st->padded->sizes);
      for (bool d : st->padded->dynamic) append_bytes(k, static_cast<uint8_t>(d));
    }
  }
  append_bytes(k, static_cast<uint32_t>(call.views.size()));
  for (const TensorView& v : call.views) {
    append_bytes(k, v.storage);
    append_bytes(k, v.dtype);
    append_bytes(k, static_cast<uint32_t>(v.geometry.sizes.size()));
    if (!with_shapes) continue;
    put_ints(k, v.geometry.sizes);
    put_ints(k, v.geometry.strides);
    append_bytes(k, v.geometry.offset);
  }
  const auto& scalars = call.scalars;
  const auto& args = call.args;
  const auto& written_views = call.written_views;
  append_bytes(k, static_cast<uint32_t>(scalars.size()));
  for (const HostScalar& s : scalars) append_bytes(k, s.dtype);
  append_bytes(k, static_cast<uint32_t>(args.size()));
  for (const ArgSpec& a : args) {
    append_bytes(k, a.kind);
    append_bytes(k, a.view);
    append_bytes(k, a.scalar);
    append_bytes(k, static_cast<uint8_t>(a.wrapped_number));
    switch (a.kind) {
      case lowering::Arg::Kind::TensorList:
        append_bytes(k, static_cast<uint32_t>(a.list_views.size()));
        for (int v : a.list_views) append_bytes(k, v);
        append_bytes(k, static_cast<uint32_t>(a.list_scalars.size()));
        for (int v : a.list_scalars) append_bytes(k, v);
        break;
      case lowering::Arg::Kind::Int:
      case lowering::Arg::Kind::Bool:
      case lowering::Arg::Kind::ScalarType:
        append_bytes(k, a.i);
        break;
      case lowering::Arg::Kind::IntList:
        if (with_shapes || !a.result_types) {
          put_ints(k, a.ints);
        } else {
          append_bytes(k, static_cast<uint32_t>(a.ints.size()));
        }
        break;
      case lowering::Arg::Kind::String:
        append_bytes(k, static_cast<uint32_t>(a.s.size()));
        k += a.s;
        break;
      case lowering::Arg::Kind::Scalar:
        append_bytes(k, static_cast<uint8_t>(a.is_static));
        if (a.is_static) {
          append_bytes(k, a.i);
          append_bytes(k, a.d);
        }
        break;
      default:
        break;
    }
  }
  append_bytes(k, static_cast<uint32_t>(written_views.size()));
  for (int v : written_views) append_bytes(k, v);
  return k;
}

}  // namespace

std::string OpCall::key() const { return call_key(*this, true); }
std::string OpCall::shape_free_key() const { return call_key(*this, false); }

}  // namespace tpu::exec
