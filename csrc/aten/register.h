// Binding the lowering registry to ATen operators (register.cpp) and the device hooks (hooks.cpp).
#pragma once
#include <string>
#include <vector>

#include "lowering/core/registry.h"

namespace tpu::aten {

// Installs the PrivateUse1 hooks (hooks.cpp).
void register_hooks();
// Binds every lowering to its ATen operator (and the derived in-place and out= variants); returns
// the number of operator overloads bound. A lowering that bind_schemas finds wrong is an import
// error in a debug build and is listed by registration_problems() in every build
// (tests/test_build.py checks it is empty); such a lowering is not bound.
int register_lowered_ops();
// Binds each aten:: lowering of `registry` to its operator's schema and returns what is wrong:
// "aten::addd.Tensor: names no operator of this torch" (a typo, or an op renamed by a torch
// upgrade) and "aten::addmm: no argument 'mat3' in <schema>" for each declared argument the
// schema lacks. `strict`: throw instead, naming them all.
std::vector<std::string> bind_schemas(lowering::Registry& registry, bool strict);
// What bind_schemas found in the process's registry at registration.
std::vector<std::string> registration_problems();

void set_cpu_fallback(bool enabled);
bool cpu_fallback_enabled();

}  // namespace tpu::aten
