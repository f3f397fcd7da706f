#include "runtime/executable.h"

#include <atomic>
#include <stdexcept>
#include <string>

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

std::vector<std::vector<BufferPtr>> Executable::execute_replicated(
    const std::vector<std::vector<PJRT_Buffer*>>& arg_lists) const {
  // 0 means "not part of a multi-device launch" to PJRT, so ids start at 1.
  static std::atomic<int> next_launch_id{1};
  const size_t num_devices = arg_lists.size();
  if (num_devices == 0) throw std::invalid_argument("execute_replicated: no argument lists");
  const size_t num_args = arg_lists[0].size();
  for (const auto& list : arg_lists)
    if (list.size() != num_args)
      throw std::invalid_argument("execute_replicated: argument lists of different lengths (" +
                                  std::to_string(list.size()) + " and " + std::to_string(num_args) + ")");
  TPU_PJRT_ARGS(PJRT_ExecuteOptions, options);
  options.launch_id = next_launch_id.fetch_add(1);
  std::vector<PJRT_Buffer* const*> args(num_devices);
  std::vector<std::vector<PJRT_Buffer*>> outputs(num_devices,
                                                 std::vector<PJRT_Buffer*>(num_outputs_, nullptr));
  std::vector<PJRT_Buffer**> out_lists(num_devices);
  for (size_t d = 0; d < num_devices; ++d) {
    args[d] = arg_lists[d].data();
    out_lists[d] = outputs[d].data();
  }
  TPU_PJRT_ARGS(PJRT_LoadedExecutable_Execute_Args, exec);
  exec.executable = loaded_;
  exec.options = &options;
  exec.argument_lists = args.data();
  exec.num_devices = num_devices;
  exec.num_args = num_args;
  exec.output_lists = out_lists.data();
  exec.execute_device = nullptr;  // every device of the compile-time assignment
  check(api_, api_->PJRT_LoadedExecutable_Execute(&exec), "PJRT_LoadedExecutable_Execute");
  std::vector<std::vector<BufferPtr>> result(num_devices);
  for (size_t d = 0; d < num_devices; ++d)
    for (PJRT_Buffer* b : outputs[d]) result[d].push_back(std::make_shared<Buffer>(api_, b));
  return result;
}

std::vector<PJRT_Device*> Executable::addressable_devices() const {
  TPU_PJRT_ARGS(PJRT_LoadedExecutable_AddressableDevices_Args, args);
  args.executable = loaded_;
  check(api_, api_->PJRT_LoadedExecutable_AddressableDevices(&args),
        "PJRT_LoadedExecutable_AddressableDevices");
  return std::vector<PJRT_Device*>(args.addressable_devices,
                                   args.addressable_devices + args.num_addressable_devices);
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

std::string Executable::optimized_program(std::string& format) const {
  if (api_->PJRT_Executable_OptimizedProgram == nullptr) return {};
  // Asked twice, as the API prescribes: the size, then the bytes into our buffer.
  PJRT_Program program{};
  program.struct_size = PJRT_Program_STRUCT_SIZE;
  TPU_PJRT_ARGS(PJRT_Executable_OptimizedProgram_Args, args);
  args.executable = exe_;
  args.program = &program;
  std::string code;
  try {
    check(api_, api_->PJRT_Executable_OptimizedProgram(&args), "PJRT_Executable_OptimizedProgram");
    code.resize(program.code_size);
    program.code = code.data();
    check(api_, api_->PJRT_Executable_OptimizedProgram(&args), "PJRT_Executable_OptimizedProgram");
  } catch (const PjrtError&) {
    return {};  // unimplemented by this plugin
  }
  format.assign(program.format, program.format_size);
  return code;
}

}  // namespace tpu::runtime
