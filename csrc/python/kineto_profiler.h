// torch.profiler's PrivateUse1 activities for tpu: see kineto_profiler.cpp.
#pragma once

namespace tpu::python {
void register_kineto_profiler();
}  // namespace tpu::python
