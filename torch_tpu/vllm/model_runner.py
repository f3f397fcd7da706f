"""vLLM's GPU model runner on `tpu`, stepping at the few shapes of `StepBuckets`.

Changed from vLLM's runner: the step's token count is padded to its bucket (vLLM pads it the same
way for CUDA graphs), the model's forward runs as one fused program at exact bucket sizes, cut
from the preparation before it and the sampling after it (which run as fused graphs of their
own, bucketed by torch_tpu's automatic dynamism), and start-up runs every bucket once.
"""

import dataclasses
import itertools
import time

import torch
from vllm.logger import init_logger
from vllm.v1.worker.gpu_model_runner import GPUModelRunner

import torch_tpu
from torch_tpu.vllm.attention import StepShape, forcing
from torch_tpu.vllm.buckets import StepBuckets

logger = init_logger(f"vllm.{__name__}")  # vLLM configures its own namespace only


def _run_preparation(module, args):
    torch_tpu._C._flush()  # the step's preparation, as its own program


def _run_forward(module, args, output):
    # Every size in the forward is a bucket already: nothing to pad on top.
    with torch_tpu.dynamism.disabled():
        torch_tpu._C._flush()


class TpuModelRunner(GPUModelRunner):
    def __init__(self, vllm_config, device):
        super().__init__(vllm_config, device)
        self.step_buckets = StepBuckets.from_config(vllm_config)

    def _determine_batch_execution_and_padding(self, num_tokens, *args, **kwargs):
        mode, batch, *rest = super()._determine_batch_execution_and_padding(
            num_tokens, *args, **kwargs
        )
        padded = self.step_buckets.pad_tokens(batch.num_tokens)
        return (mode, dataclasses.replace(batch, num_tokens=padded), *rest)

    def load_model(self, *args, **kwargs) -> None:
        super().load_model(*args, **kwargs)
        self.model.register_forward_pre_hook(_run_preparation)
        self.model.register_forward_hook(_run_forward)

    def step_shapes(self):
        """(token bucket, StepShape) of every step the scheduler can make."""
        buckets = self.step_buckets
        for tokens, context in itertools.product(buckets.tokens, buckets.contexts):
            if tokens <= buckets.max_requests:
                yield tokens, StepShape(decodes=True, prefills=False, context=context)
            if tokens >= 2:
                yield tokens, StepShape(decodes=False, prefills=True, context=context)
            if tokens >= 3:
                yield tokens, StepShape(decodes=True, prefills=True, context=context)

    def compile_buckets(self) -> None:
        """Runs a dummy step at every shape (compiled, or loaded from the disk cache), and the
        sampler at two batch sizes, so that serving compiles nothing."""
        start = time.perf_counter()
        compiles = torch_tpu.metrics.counters()["compiles"]
        shapes = list(self.step_shapes())
        for tokens, shape in shapes:
            with forcing(shape):
                self._dummy_run(tokens, force_attention=True)
        hidden, _ = self._dummy_run(min(self.step_buckets.max_requests, self.max_num_tokens))
        self._dummy_sampler_run(hidden)
        self._dummy_sampler_run(hidden[: max(1, hidden.shape[0] // 2)])
        torch.tpu.synchronize()
        self.compiles_at_start_up = torch_tpu.metrics.counters()["compiles"]
        logger.info(
            "Ran %d step shapes in %.1f s (%d programs compiled, the rest from the cache)",
            len(shapes),
            time.perf_counter() - start,
            self.compiles_at_start_up - compiles,
        )

    def compiles_since_start_up(self) -> int:
        """Programs compiled while serving: 0 unless a step left its buckets."""
        return torch_tpu.metrics.counters()["compiles"] - self.compiles_at_start_up
