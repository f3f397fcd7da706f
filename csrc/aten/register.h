// Binding the lowering registry to ATen operators (register.cpp) and the device hooks (hooks.cpp).
#pragma once
#include <string>
#include <vector>

namespace tpu::aten {

// Installs the PrivateUse1 hooks (hooks.cpp).
void register_hooks();
// Binds every lowering to its ATen operator (and the derived in-place and out= variants); returns
// the number of operator overloads bound. A lowering whose name resolves to no operator of this
// torch (a typo, or an op renamed by a torch upgrade), or whose Signature declares an argument
// the schema lacks, is an error in a debug build and is listed by unresolved_lowering_names() in
// every build (tests/test_build.py checks it is empty); such a lowering is not bound.
int register_lowered_ops();
// Those of `names` ("aten::add.Tensor") that name no operator the dispatcher knows.
std::vector<std::string> unresolved_lowering_names(const std::vector<std::string>& names);
// The registry's lowerings whose names resolve to no operator, and "op: no argument 'x'" for
// each argument a lowering's Signature declares that its operator's schema does not have.
std::vector<std::string> unresolved_lowering_names();
// Those of `args` that the schema of operator `name` does not have (the check registration makes).
std::vector<std::string> undeclared_arguments(const std::string& name, const std::vector<std::string>& args);

void set_cpu_fallback(bool enabled);
bool cpu_fallback_enabled();

}  // namespace tpu::aten
