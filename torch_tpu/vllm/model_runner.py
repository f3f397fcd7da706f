"""vLLM's GPU model runner on `tpu`, stepping at the few shapes of `StepBuckets`.

Changed from vLLM's runner: the step's token count is padded to its bucket (vLLM pads it the same
way for CUDA graphs), the model's forward runs as one fused program at exact bucket sizes, cut
from the preparation before it and the sampling after it (which run as fused graphs of their
own, bucketed by torch_tpu's automatic dynamism), and start-up runs every bucket once. What
compiles while serving is counted (`compiles_since_start_up`) and logged.
"""

import collections
import dataclasses
import itertools
import time

import torch
from vllm.logger import init_logger
from vllm.model_executor.layers.linear import LinearBase, UnquantizedLinearMethod
from vllm.model_executor.layers.vocab_parallel_embedding import (
    ParallelLMHead,
    UnquantizedEmbeddingMethod,
)
from vllm.v1.worker.gpu_model_runner import GPUModelRunner

import torch_tpu
from torch_tpu.vllm.attention import StepShape, forcing
from torch_tpu.vllm.buckets import StepBuckets
from torch_tpu.vllm.warm_up import serve_made_up_requests

logger = init_logger(f"vllm.{__name__}")  # vLLM configures its own namespace only


def _compiles() -> int:
    return torch_tpu.metrics.counters()["compiles"]


def _lay_out_linear_weights_by_input(model: torch.nn.Module) -> None:
    """Unquantized linear weights [out, in] kept in memory as [in, out] (as vLLM does on XPU):
    XLA:CPU's matmul then reads them as they lie, where [out, in] it packs them transposed at
    every call, which took twice the time of the products themselves at decode sizes. The LM
    head too, unless its weight is the embedding's (whose rows a lookup reads)."""
    uses = collections.Counter(id(p) for _, p in model.named_parameters(remove_duplicate=False))
    for module in model.modules():
        weight = getattr(module, "weight", None)
        linear = isinstance(module, LinearBase) and isinstance(
            module.quant_method, UnquantizedLinearMethod
        )
        head = isinstance(module, ParallelLMHead) and isinstance(
            module.quant_method, UnquantizedEmbeddingMethod
        )
        if (
            (linear or head)
            and isinstance(weight, torch.nn.Parameter)
            and uses[id(weight)] == 1
            and weight.dim() == 2
            and weight.is_contiguous()
        ):
            weight.data = weight.data.t().contiguous().t()


class TpuModelRunner(GPUModelRunner):
    def __init__(self, vllm_config, device):
        super().__init__(vllm_config, device)
        self.step_buckets = StepBuckets.from_config(vllm_config)
        self.serving = False  # set once start-up has run every bucket
        self.forward_compiles = 0  # forward programs compiled while serving
        self.other_compiles = 0  # other programs (preparation, sampling) compiled while serving

    def _determine_batch_execution_and_padding(self, num_tokens, *args, **kwargs):
        mode, batch, *rest = super()._determine_batch_execution_and_padding(
            num_tokens, *args, **kwargs
        )
        padded = self.step_buckets.pad_tokens(batch.num_tokens)
        return (mode, dataclasses.replace(batch, num_tokens=padded), *rest)

    def load_model(self, *args, **kwargs) -> None:
        super().load_model(*args, **kwargs)
        _lay_out_linear_weights_by_input(self.model)
        self.model.register_forward_pre_hook(self._run_preparation)
        self.model.register_forward_hook(self._run_forward)

    def _run_preparation(self, module, args):
        torch_tpu._C._flush()  # the step's preparation, as its own program

    def _run_forward(self, module, args, output):
        before = _compiles()
        # Every size in the forward is a bucket already: nothing to pad on top.
        with torch_tpu.dynamism.disabled():
            torch_tpu._C._flush()
        if self.serving:
            self.forward_compiles += _compiles() - before

    def initialize_kv_cache(self, *args, **kwargs):
        super().initialize_kv_cache(*args, **kwargs)
        # The attention builders read the block table on the host (attention.py).
        for gid, groups in enumerate(self.attn_groups):
            for group in groups:
                builder = group.get_metadata_builder()
                builder.block_table_cpu = self.input_batch.block_table[gid].block_table.np

    def step_shapes(self):
        """(token bucket, StepShape) of every step the scheduler can make."""
        buckets = self.step_buckets
        # A step of decodes only has at most max_num_seqs tokens: up to that count's bucket.
        decodes_up_to = buckets.pad_tokens(min(buckets.max_requests, buckets.tokens[-1]))
        for tokens, context in itertools.product(buckets.tokens, buckets.contexts):
            if tokens <= decodes_up_to:
                yield tokens, StepShape(decodes=True, prefills=False, context=context)
            if tokens >= 2:
                yield tokens, StepShape(decodes=False, prefills=True, context=context)
            if tokens >= 3:
                yield tokens, StepShape(decodes=True, prefills=True, context=context)

    def compile_buckets(self) -> None:
        """Runs a dummy step at every shape (compiled, or loaded from the disk cache), then steps
        of made-up requests for the graphs around the forward (warm_up.py)."""
        start = time.perf_counter()
        compiles = _compiles()
        shapes = list(self.step_shapes())
        for tokens, shape in shapes:
            with forcing(shape):
                self._dummy_run(tokens, force_attention=True)
        serve_made_up_requests(self)
        torch.tpu.synchronize()
        logger.info(
            "Ran %d step shapes and made-up requests in %.1f s (%d programs compiled, the rest "
            "from the disk cache)",
            len(shapes),
            time.perf_counter() - start,
            _compiles() - compiles,
        )
        self.serving = True

    def execute_model(self, *args, **kwargs):
        before = _compiles()
        forward_before = self.forward_compiles
        output = super().execute_model(*args, **kwargs)
        self._count_other_compiles(before, forward_before)
        return output

    def sample_tokens(self, *args, **kwargs):
        before = _compiles()
        output = super().sample_tokens(*args, **kwargs)
        self._count_other_compiles(before, self.forward_compiles)
        return output

    def _count_other_compiles(self, before, forward_before) -> None:
        if not self.serving:
            return
        forward = self.forward_compiles - forward_before
        other = _compiles() - before - forward
        self.other_compiles += other
        if forward:
            logger.warning(
                "torch_tpu compiled %d forward programs while serving (%d since start-up): a "
                "step outside the buckets compiled at start-up",
                forward,
                self.forward_compiles,
            )
        if other:
            logger.info(
                "torch_tpu compiled %d programs around the forward while serving (%d since "
                "start-up): vLLM's preparation or sampling met sizes torch_tpu had not bucketed",
                other,
                self.other_compiles,
            )

    def compiles_since_start_up(self) -> dict[str, int]:
        """Programs compiled while serving: the forward's (0 unless a step left its buckets)
        and the others' (vLLM's input preparation and sampling, which can meet sizes that
        torch_tpu's automatic dynamism had not bucketed yet)."""
        return {"forward": self.forward_compiles, "other": self.other_compiles}
