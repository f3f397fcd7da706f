// Where user code is ("model.py:42"): named in errors raised long after a call and in the
// program dump's index. The Python layer installs the function (exec stays free of Python).
#pragma once
#include <string>

namespace tpu::exec {

void set_source_location_hook(const std::string& (*hook)());
// The innermost user frame, or "" without a hook (C++ tests). Takes the GIL through the hook:
// call it before taking locks that a Python thread may hold. Locations are interned: the string
// lives as long as the process, so a recorded op keeps a pointer to it, not a copy.
const std::string& current_source_location();

}  // namespace tpu::exec
