"""The `tpu` platform as vLLM sees it: device, dispatch key, distributed backend, memory and the
worker, attention backend and compile settings that run vLLM's model runner on it."""

import os

import torch
from vllm.logger import init_logger
from vllm.platforms.interface import Platform, PlatformEnum
from vllm.v1.attention.backends.registry import AttentionBackendEnum

logger = init_logger(f"vllm.{__name__}")  # vLLM configures its own namespace only

ATTENTION_BACKEND = "torch_tpu.vllm.attention.TpuPagedAttentionBackend"
# vLLM names attention backends by enum member (logs, `--attention-backend`, its checks).
if "TPU_PAGED" not in AttentionBackendEnum.__members__:
    AttentionBackendEnum.register("TPU_PAGED", ATTENTION_BACKEND)


class TpuPlatform(Platform):
    _enum = PlatformEnum.OOT
    device_name = "tpu"
    device_type = "tpu"
    dispatch_key = "PrivateUse1"
    dist_backend = "tpu_dist"
    simple_compile_backend = "tpu"
    device_control_env_var = "TORCH_TPU_VISIBLE_DEVICES"
    # What quantization.py runs; vLLM refuses any other method at start-up, naming it.
    supported_quantization = ["fp8_per_channel"]

    @property
    def supported_dtypes(self):
        return [torch.float32, torch.bfloat16, torch.float16]

    @classmethod
    def import_kernels(cls) -> None:
        # vLLM's C++ kernels are CPU or CUDA code: given tpu tensors they would read device
        # handles as host pointers. None is loaded, so any path that still calls one fails by name.
        pass

    @classmethod
    def register_triton_kernel_overrides(cls) -> None:
        from vllm.triton_utils.dispatcher import register_kernels

        from torch_tpu.vllm.kernels import OVERRIDES
        from torch_tpu.vllm.quantization import register_linear_kernels

        register_kernels(OVERRIDES)
        # Here too: the hook runs in each worker before its model is built.
        register_linear_kernels()

    @classmethod
    def check_if_supports_dtype(cls, dtype: torch.dtype) -> None:
        if dtype not in (torch.float32, torch.bfloat16, torch.float16):
            raise ValueError(f"torch_tpu's vLLM platform does not run models in {dtype}")

    @classmethod
    def get_device_name(cls, device_id: int = 0) -> str:
        return torch.tpu.get_device_properties(device_id).name

    @classmethod
    def get_device_total_memory(cls, device_id: int = 0) -> int:
        return torch.tpu.get_device_properties(device_id).total_memory

    @classmethod
    def set_device(cls, device: torch.device) -> None:
        torch.tpu.set_device(device)

    @classmethod
    def manual_seed_all(cls, seed: int) -> None:
        torch.tpu.manual_seed_all(seed)

    @classmethod
    def inference_mode(cls):
        return torch.inference_mode(mode=True)

    @classmethod
    def is_pin_memory_available(cls) -> bool:
        return False

    @classmethod
    def get_current_memory_usage(cls, device=None) -> float:
        return float(torch.tpu.memory_allocated(device))

    @classmethod
    def get_compile_backend(cls) -> str:
        return "tpu"

    @classmethod
    def get_attn_backend_cls(cls, selected_backend, attn_selector_config, num_heads=None) -> str:
        if attn_selector_config.use_mla or attn_selector_config.use_sparse:
            raise NotImplementedError(
                "torch_tpu's vLLM platform has no MLA or sparse attention yet"
            )
        if selected_backend is not None:
            logger.info(
                "Attention backend %s is not available on tpu; using TPU_PAGED.", selected_backend
            )
        return ATTENTION_BACKEND

    @classmethod
    def check_and_update_config(cls, vllm_config) -> None:
        # Imported here: vllm.config imports the platform being resolved.
        from vllm.config import CompilationMode, CUDAGraphMode

        parallel = vllm_config.parallel_config
        if parallel.worker_cls == "auto":
            parallel.worker_cls = "torch_tpu.vllm.worker.TpuWorker"
        cache = vllm_config.cache_config
        if not cache.user_specified_block_size:
            cache.block_size = 16
        # The step runs op by op for now (eager): no CUDA graphs, no vLLM compile.
        compilation = vllm_config.compilation_config
        compilation.mode = CompilationMode.NONE
        compilation.cudagraph_mode = CUDAGraphMode.NONE
        compilation.cudagraph_capture_sizes = []
        vllm_config.scheduler_config.async_scheduling = False
        # A forked child inherits the PJRT client without its threads, and its first wait on the
        # device never returns: vLLM's processes start by spawn.
        os.environ["VLLM_WORKER_MULTIPROC_METHOD"] = "spawn"
        if parallel.enable_dbo:
            parallel.enable_dbo = False

    @classmethod
    def get_device_communicator_cls(cls) -> str:
        return (
            "vllm.distributed.device_communicators.base_device_communicator.DeviceCommunicatorBase"
        )

    @classmethod
    def support_hybrid_kv_cache(cls) -> bool:
        return False

    @classmethod
    def support_static_graph_mode(cls) -> bool:
        return False
