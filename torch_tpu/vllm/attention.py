"""Paged attention for vLLM on `tpu`, in PyTorch ops (lowered like any other).

The KV cache of a layer is laid out [blocks, block_size, kv_heads, 2 * head_size] in memory
(vLLM's LBNHC layout, seen by the backend as [blocks, kv_heads, block_size, 2 * head_size]): a
token's keys and values for every head are one row of the cache flattened to
[blocks * block_size, kv_heads, 2 * head_size], so writing a step's tokens is an `index_copy_`
of their rows at `slot_mapping`. Each request then attends over its own context, gathered
through its block table, with the causal offset of its new tokens (chunked prefill and decode
in one batch) and an optional sliding window.
"""

from dataclasses import dataclass
from typing import ClassVar

import torch
from vllm.v1.attention.backend import (
    AttentionBackend,
    AttentionImpl,
    AttentionMetadataBuilder,
    AttentionType,
    CommonAttentionMetadata,
)
from vllm.v1.kv_cache_layout import KVCacheLayout


class TpuPagedAttentionBackend(AttentionBackend):
    forward_includes_kv_cache_update: bool = False
    supported_dtypes: ClassVar[list[torch.dtype]] = [torch.float32, torch.bfloat16, torch.float16]
    supported_kv_cache_dtypes: ClassVar[list[str]] = ["auto"]

    @staticmethod
    def get_name() -> str:
        return "TPU_PAGED"

    @classmethod
    def supported_kv_cache_layouts(cls):
        return (KVCacheLayout.LBNHC,)

    @classmethod
    def supports_sliding_window(cls) -> bool:
        return True

    @classmethod
    def supports_attn_type(cls, attn_type: str) -> bool:
        return attn_type == AttentionType.DECODER

    @staticmethod
    def get_impl_cls():
        return TpuPagedAttentionImpl

    @staticmethod
    def get_builder_cls():
        return TpuPagedAttentionMetadataBuilder


@dataclass
class RequestContext:
    """What every layer of a step reads of one request: its new tokens' rows in the batch, the
    cache rows of its whole context, and the positions of its new tokens and of its context."""

    q0: int
    q1: int
    slots: torch.Tensor  # [seq_len] cache rows, in position order
    pos_q: torch.Tensor  # [q_len, 1]
    pos_k: torch.Tensor  # [1, seq_len]


@dataclass
class TpuPagedAttentionMetadata:
    num_actual_tokens: int
    slot_mapping: torch.Tensor  # [tokens] cache row of each new token
    requests: list[RequestContext]  # built once per step, read by every layer


class TpuPagedAttentionMetadataBuilder(AttentionMetadataBuilder[TpuPagedAttentionMetadata]):
    # Spelled out: the base class declares __init__ abstract.
    def __init__(self, kv_cache_spec, layer_names, vllm_config, device):
        super().__init__(kv_cache_spec, layer_names, vllm_config, device)

    def build(
        self,
        common_prefix_len: int,
        common_attn_metadata: CommonAttentionMetadata,
        fast_build: bool = False,
    ):
        m = common_attn_metadata
        seq_lens = (
            m.seq_lens_cpu_upper_bound
            if m.seq_lens_cpu_upper_bound is not None
            else m.seq_lens.cpu()
        )
        starts = m.query_start_loc_cpu[: m.num_reqs + 1].tolist()
        block_size = self.kv_cache_spec.block_size
        device = m.block_table_tensor.device
        offsets = torch.arange(block_size, device=device)
        requests = []
        for r, seq_len in enumerate(seq_lens[: m.num_reqs].tolist()):
            q0, q1 = starts[r], starts[r + 1]
            if q1 == q0:
                continue
            blocks = (seq_len + block_size - 1) // block_size
            slots = (m.block_table_tensor[r, :blocks, None].long() * block_size + offsets).reshape(
                -1
            )
            # New tokens are the last q_len of the sequence: token i sits at seq_len - q_len + i.
            requests.append(
                RequestContext(
                    q0=q0,
                    q1=q1,
                    slots=slots[:seq_len],
                    pos_q=torch.arange(seq_len - (q1 - q0), seq_len, device=device)[:, None],
                    pos_k=torch.arange(seq_len, device=device)[None, :],
                )
            )
        return TpuPagedAttentionMetadata(
            num_actual_tokens=m.num_actual_tokens, slot_mapping=m.slot_mapping, requests=requests
        )


class TpuPagedAttentionImpl(AttentionImpl):
    def __init__(
        self,
        num_heads: int,
        head_size: int,
        scale: float,
        num_kv_heads: int | None = None,
        alibi_slopes: list[float] | None = None,
        sliding_window: int | None = None,
        kv_cache_dtype: str = "auto",
        logits_soft_cap: float | None = None,
        attn_type: str = AttentionType.DECODER,
        kv_sharing_target_layer_name: str | None = None,
        sinks: torch.Tensor | None = None,
    ) -> None:
        if alibi_slopes is not None or sinks is not None:
            raise NotImplementedError(
                "torch_tpu's paged attention has no ALiBi or attention sinks yet"
            )
        if kv_cache_dtype != "auto":
            raise NotImplementedError(
                f"torch_tpu's paged attention has no {kv_cache_dtype} KV cache yet"
            )
        self.num_heads = num_heads
        self.head_size = head_size
        self.scale = float(scale)
        self.num_kv_heads = num_kv_heads or num_heads
        # vLLM's window counts the token itself: it sees the `sliding_window - 1` before it.
        self.sliding_window = sliding_window
        self.logits_soft_cap = logits_soft_cap
        self.kv_cache_dtype = kv_cache_dtype
        self.attn_type = attn_type
        self.kv_sharing_target_layer_name = kv_sharing_target_layer_name

    def _rows(self, kv_cache: torch.Tensor) -> torch.Tensor:
        blocks, heads, block_size, content = kv_cache.shape
        return kv_cache.permute(0, 2, 1, 3).reshape(blocks * block_size, heads, content)

    def do_kv_cache_update(self, layer, key, value, kv_cache, slot_mapping) -> None:
        n = slot_mapping.shape[0]
        self._rows(kv_cache).index_copy_(
            0, slot_mapping.long(), torch.cat([key[:n], value[:n]], dim=-1)
        )

    def forward(
        self,
        layer,
        query,
        key,
        value,
        kv_cache,
        attn_metadata,
        output,
        output_scale=None,
        output_block_scale=None,
    ):
        if output_scale is not None or output_block_scale is not None:
            raise NotImplementedError("fused output quantization is not supported on tpu")
        if attn_metadata is None:  # profile run
            return output
        rows = self._rows(kv_cache)
        group = self.num_heads // self.num_kv_heads
        for req in attn_metadata.requests:
            q0, q1 = req.q0, req.q1
            kv = rows.index_select(0, req.slots)  # [seq_len, kv_heads, 2 * head_size]
            k = kv[..., : self.head_size].transpose(0, 1)
            v = kv[..., self.head_size :].transpose(0, 1)
            if group > 1:
                k = k.repeat_interleave(group, dim=0)
                v = v.repeat_interleave(group, dim=0)
            q = query[q0:q1].transpose(0, 1)  # [heads, q_len, head_size]
            allowed = req.pos_k <= req.pos_q
            if self.sliding_window is not None:
                allowed &= req.pos_k > req.pos_q - self.sliding_window
            scores = torch.matmul(q, k.transpose(1, 2)).float() * self.scale
            if self.logits_soft_cap:
                scores = self.logits_soft_cap * torch.tanh(scores / self.logits_soft_cap)
            scores = scores.masked_fill(~allowed, float("-inf"))
            probs = torch.softmax(scores, dim=-1).to(v.dtype)
            out = torch.matmul(probs, v).transpose(0, 1)  # [q_len, heads, head_size]
            output[q0:q1] = out.reshape(q1 - q0, *output.shape[1:])
        return output
