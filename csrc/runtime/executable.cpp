#include "runtime/executable.h"

#include "runtime/pjrt_error.h"

namespace tpu::runtime {

Executable::Executable(const PJRT_Api* api, PJRT_LoadedExecutable* exe) : api_(api), loaded_(exe) {
  TPU_PJRT_ARGS(PJRT_LoadedExecutable_GetExecutable_Args, get);
  get.loaded_executable = loaded_;
  check(api_, api_->PJRT_LoadedExecutable_GetExecutable(&get), "PJRT_LoadedExecutable_GetExecutable");
  exe_ = get.executable;
  TPU_PJRT_ARGS(PJRT_Executable_NumOutputs_Args, n);
  n.executable = exe_;
  check(api_, api_->PJRT_Executable_NumOutputs(&n), "PJRT_Executable_NumOutputs");
  num_outputs_ = n.num_outputs;
}

Executable::~Executable() {
  if (exe_ != nullptr) {
    TPU_PJRT_ARGS(PJRT_Executable_Destroy_Args, d);
    d.executable = exe_;
    api_->PJRT_Executable_Destroy(&d);
  }
  TPU_PJRT_ARGS(PJRT_LoadedExecutable_Destroy_Args, d);
  d.executable = loaded_;
  api_->PJRT_LoadedExecutable_Destroy(&d);
}

std::vector<BufferPtr> Executable::execute(const std::vector<PJRT_Buffer*>& args, PJRT_Device* device,
                                           const std::vector<int64_t>& non_donatable) const {
  TPU_PJRT_ARGS(PJRT_ExecuteOptions, options);
  options.non_donatable_input_indices = non_donatable.data();
  options.num_non_donatable_input_indices = non_donatable.size();
  std::vector<PJRT_Buffer*> outputs(num_outputs_, nullptr);
  PJRT_Buffer* const* arg_list = args.data();
  PJRT_Buffer** out_list = outputs.data();
  TPU_PJRT_ARGS(PJRT_LoadedExecutable_Execute_Args, exec);
  exec.executable = loaded_;
  exec.options = &options;
  exec.argument_lists = &arg_list;
  exec.num_devices = 1;
  exec.num_args = args.size();
  exec.output_lists = &out_list;
  exec.execute_device = device;
  check(api_, api_->PJRT_LoadedExecutable_Execute(&exec), "PJRT_LoadedExecutable_Execute");
  std::vector<BufferPtr> result;
  result.reserve(num_outputs_);
  for (PJRT_Buffer* b : outputs) result.push_back(std::make_shared<Buffer>(api_, b));
  return result;
}

std::string Executable::serialize() const {
  TPU_PJRT_ARGS(PJRT_Executable_Serialize_Args, args);
  args.executable = exe_;
  check(api_, api_->PJRT_Executable_Serialize(&args), "PJRT_Executable_Serialize");
  std::string bytes(args.serialized_bytes, args.serialized_bytes_size);
  if (args.serialized_executable_deleter != nullptr)
    args.serialized_executable_deleter(args.serialized_executable);
  return bytes;
}

}  // namespace tpu::runtime
