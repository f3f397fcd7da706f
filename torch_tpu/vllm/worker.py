"""vLLM's GPU worker on a `tpu` device, running vLLM's model runner at fixed shapes
(`TpuModelRunner`) in fused eager mode.

What is CUDA-only in them is turned off by the platform's settings (CUDA graphs, async
scheduling and its copy streams) or replaced here (device set-up, memory sizing, the CUDA
kernel warm-up, the sleep-mode allocator).
"""

import gc
from contextlib import nullcontext

import torch
from vllm.logger import init_logger
from vllm.platforms import current_platform
from vllm.utils.mem_utils import MemorySnapshot
from vllm.utils.torch_utils import set_random_seed
from vllm.v1.worker.gpu_worker import Worker, init_worker_distributed_environment
from vllm.v1.worker.worker_base import CompilationTimes

import torch_tpu
from torch_tpu.vllm.model_runner import TpuModelRunner

logger = init_logger(f"vllm.{__name__}")  # vLLM configures its own namespace only


class TpuWorker(Worker):
    def init_device(self):
        self.device = torch.device("tpu", self.local_rank)
        current_platform.set_device(self.device)
        # A step is recorded and run as a few programs, not launched op by op.
        torch_tpu.set_eager_mode("fused")
        # The graphs around the forward (logits, sampling) see the step's request count: bucketed
        # from 8 rows, not padded to 128, where a decode batch of 8 computed 16 times its logits.
        torch_tpu.dynamism.set_buckets(minimum=8)
        current_platform.check_if_supports_dtype(self.model_config.dtype)
        init_worker_distributed_environment(
            self.vllm_config,
            self.rank,
            self.distributed_init_method,
            self.local_rank,
            current_platform.dist_backend,
        )
        set_random_seed(self.model_config.seed)
        gc.collect()
        self.init_snapshot = MemorySnapshot(device=self.device)
        self._init_workspace_and_model_runner()

    def _make_model_runner(self):
        return TpuModelRunner(self.vllm_config, self.device)

    def _maybe_get_memory_pool_context(self, tag: str):
        return nullcontext()

    def determine_available_memory(self) -> int:
        """Bytes for the KV cache: `kv_cache_memory_bytes` when set, else the share of the
        device's memory that `gpu_memory_utilization` gives, less what the weights and a
        profile run of the largest batch use."""
        self.model_runner.profile_run()
        torch.tpu.synchronize()
        if self.cache_config.kv_cache_memory_bytes:
            return self.cache_config.kv_cache_memory_bytes
        free, total = torch.tpu.mem_get_info(self.device)
        budget = int(total * self.cache_config.gpu_memory_utilization)
        used = total - free
        available = budget - used
        if available <= 0:
            raise ValueError(
                f"No memory left for the KV cache on {self.device}: {used / 2**30:.2f} GiB in use "
                f"of the {budget / 2**30:.2f} GiB that gpu_memory_utilization="
                f"{self.cache_config.gpu_memory_utilization} allows; raise it or set "
                "kv_cache_memory_bytes"
            )
        return available

    def compile_or_warm_up_model(self) -> CompilationTimes:
        # In place of the GPU worker's warm-up, which tunes CUDA kernels and captures graphs.
        self.model_runner.compile_buckets()
        set_random_seed(self.model_config.seed)
        return CompilationTimes(
            language_model=self.compilation_config.compilation_time,
            encoder=self.compilation_config.encoder_compilation_time,
        )

    def compiles_since_start_up(self) -> dict[str, int]:
        """For `LLM.collective_rpc("compiles_since_start_up")`."""
        return self.model_runner.compiles_since_start_up()

    def sleep(self, level: int = 1) -> None:
        logger.warning("Sleep mode is not supported on tpu; ignored.")

    def wake_up(self, tags=None) -> None:
        logger.warning("Sleep mode is not supported on tpu; ignored.")
