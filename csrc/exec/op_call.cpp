#include "exec/op_call.h"

#include <cstring>

namespace tpu::exec {

namespace {

template <typename T>
void put(std::string& k, const T& v) {
  k.append(reinterpret_cast<const char*>(&v), sizeof v);
}

void put_ints(std::string& k, const std::vector<int64_t>& v) {
  put(k, static_cast<uint32_t>(v.size()));
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

std::string OpCall::key() const {
  std::string k;
  k.reserve(256);
  put(k, lowering);
  put(k, static_cast<uint8_t>(random));
  put(k, static_cast<uint32_t>(storages.size()));
  for (size_t s = 0; s < storages.size(); ++s) {
    put(k, storage_dtype(*this, static_cast<int>(s)));
    put(k, storage_numel(*this, static_cast<int>(s)));
    put(k, static_cast<uint8_t>(storages[s]->defined));
  }
  put(k, static_cast<uint32_t>(views.size()));
  for (const TensorView& v : views) {
    put(k, v.storage);
    put(k, v.dtype);
    put_ints(k, v.geometry.sizes);
    put_ints(k, v.geometry.strides);
    put(k, v.geometry.offset);
  }
  put(k, static_cast<uint32_t>(scalars.size()));
  for (const HostScalar& s : scalars) put(k, s.dtype);
  put(k, static_cast<uint32_t>(args.size()));
  for (const ArgSpec& a : args) {
    put(k, a.kind);
    put(k, a.view);
    put(k, a.scalar);
    put(k, static_cast<uint8_t>(a.wrapped_number));
    switch (a.kind) {
      case lowering::Arg::Kind::TensorList:
        put(k, static_cast<uint32_t>(a.list_views.size()));
        for (int v : a.list_views) put(k, v);
        put(k, static_cast<uint32_t>(a.list_scalars.size()));
        for (int v : a.list_scalars) put(k, v);
        break;
      case lowering::Arg::Kind::Int:
      case lowering::Arg::Kind::Bool:
      case lowering::Arg::Kind::ScalarType:
        put(k, a.i);
        break;
      case lowering::Arg::Kind::IntList:
        put_ints(k, a.ints);
        break;
      case lowering::Arg::Kind::String:
        put(k, static_cast<uint32_t>(a.s.size()));
        k += a.s;
        break;
      case lowering::Arg::Kind::Scalar:
        put(k, static_cast<uint8_t>(a.is_static));
        if (a.is_static) {
          put(k, a.i);
          put(k, a.d);
        }
        break;
      default:
        break;
    }
  }
  put(k, static_cast<uint32_t>(written_views.size()));
  for (int v : written_views) put(k, v);
  return k;
}

}  // namespace tpu::exec
