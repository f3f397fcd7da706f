"""Paged attention for vLLM on `tpu`, in PyTorch ops (lowered like any other), at fixed shapes.

The KV cache of a layer is laid out [blocks, block_size, kv_heads, 2 * head_size] in memory
(vLLM's LBNHC layout, seen by the backend as [blocks, kv_heads, block_size, 2 * head_size]): a
token's keys and values for every head are one row of the cache flattened to
[blocks * block_size, kv_heads, 2 * head_size], so writing a step's tokens is an `index_copy_`
of their rows at `slot_mapping` (padding tokens write to vLLM's null block, which no request owns).

The step's queries are then read in two groups of fixed size, each row of a group attending over
the first `context` positions of its request's cache (gathered through the block table) with the
causal and sliding-window mask of its position: one row per one-token request (decode), and
tiles of `tile` consecutive tokens of one longer request (prefill, chunked or not). The group
sizes follow from the step's token bucket and `context` is a bucket too, so a step's program
depends on its buckets only, never on how its requests are made up.
"""

import contextlib
from dataclasses import dataclass
from typing import ClassVar

import numpy as np
import torch
from vllm.v1.attention.backend import (
    AttentionBackend,
    AttentionImpl,
    AttentionMetadataBuilder,
    AttentionType,
    CommonAttentionMetadata,
)
from vllm.v1.kv_cache_layout import KVCacheLayout

from torch_tpu.vllm.buckets import StepBuckets


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


@dataclass(frozen=True)
class StepShape:
    """What a step's attention program depends on, besides the token bucket."""

    decodes: bool  # has the group of one-token requests
    prefills: bool  # has the group of tiles of longer requests
    context: int  # context bucket


@dataclass
class QueryGroup:
    """Query rows read as [rows, width] (width 1 for decodes, the tile size for prefills)."""

    token: torch.Tensor  # [rows, width] batch row of each query (padding: 0)
    position: torch.Tensor  # [rows, width] its position (padding: 0, so it sees one key)
    slots: torch.Tensor  # [rows, context] cache rows of its request's context, by position


@dataclass
class TpuPagedAttentionMetadata:
    num_actual_tokens: int
    groups: list[QueryGroup]
    source: torch.Tensor  # [padded tokens] each batch row's row in the groups' joined outputs


_forced_shape: StepShape | None = None


@contextlib.contextmanager
def forcing(shape: StepShape):
    """Builds every step's metadata at `shape`, all padding: how start-up compiles each bucket
    with vLLM's dummy batches."""
    global _forced_shape
    _forced_shape = shape
    try:
        yield
    finally:
        _forced_shape = None


class TpuPagedAttentionMetadataBuilder(AttentionMetadataBuilder[TpuPagedAttentionMetadata]):
    # Spelled out: the base class declares __init__ abstract.
    def __init__(self, kv_cache_spec, layer_names, vllm_config, device):
        super().__init__(kv_cache_spec, layer_names, vllm_config, device)
        self.buckets = StepBuckets.from_config(vllm_config)
        self.block_table_cpu: np.ndarray | None = None  # [max requests, blocks], set by the runner

    def build(
        self,
        common_prefix_len: int,
        common_attn_metadata: CommonAttentionMetadata,
        fast_build: bool = False,
    ):
        m = common_attn_metadata
        padded = self.buckets.pad_tokens(m.num_actual_tokens)
        num_reqs = m.num_reqs
        starts = m.query_start_loc_cpu[: num_reqs + 1].numpy()
        # Exact here: vLLM's bound is loose only for asynchronous speculative decoding.
        bound = m.seq_lens_cpu_upper_bound
        seq_lens = (bound if bound is not None else m.seq_lens)[:num_reqs].cpu().numpy()
        query_lens = np.diff(starts)
        decodes = np.flatnonzero(query_lens == 1)
        prefills = np.flatnonzero(query_lens > 1)
        shape = _forced_shape or StepShape(
            decodes=len(decodes) > 0,
            prefills=len(prefills) > 0,
            context=self.buckets.pad_context(int(seq_lens.max(initial=1))),
        )
        if _forced_shape is not None:
            decodes = prefills = np.zeros(0, dtype=np.int64)

        source = np.zeros(padded, dtype=np.int64)
        groups, rows_before = [], 0
        if shape.decodes:
            rows = self.buckets.decode_rows(padded)
            token, position = np.zeros((rows, 1), np.int64), np.zeros((rows, 1), np.int64)
            request = np.zeros(rows, np.int64)
            token[: len(decodes), 0] = starts[decodes]
            position[: len(decodes), 0] = seq_lens[decodes] - 1
            request[: len(decodes)] = decodes
            source[starts[decodes]] = np.arange(len(decodes))
            groups.append(self._group(token, position, request, shape.context))
            rows_before = rows
        if shape.prefills:
            tile = self.buckets.tile
            rows = self.buckets.prefill_tiles(padded)
            token, position = np.zeros((rows, tile), np.int64), np.zeros((rows, tile), np.int64)
            request = np.zeros(rows, np.int64)
            t = 0
            for r in prefills:
                q0, q1 = int(starts[r]), int(starts[r + 1])
                first_position = int(seq_lens[r]) - (q1 - q0)
                for begin in range(q0, q1, tile):
                    end = min(begin + tile, q1)
                    token[t, : end - begin] = np.arange(begin, end)
                    position[t, : end - begin] = first_position + np.arange(begin - q0, end - q0)
                    request[t] = r
                    source[begin:end] = rows_before + t * tile + np.arange(end - begin)
                    t += 1
            groups.append(self._group(token, position, request, shape.context))
        return TpuPagedAttentionMetadata(
            num_actual_tokens=m.num_actual_tokens,
            groups=groups,
            source=self._upload(source),
        )

    def _upload(self, array: np.ndarray) -> torch.Tensor:
        return torch.from_numpy(array).to(self.device, non_blocking=True)

    def _group(self, token, position, request, context) -> QueryGroup:
        # Built on the host from the runner's copy of the block table: computed on the device,
        # in the preparation's graph, they could arrive padded by its dynamism and change the
        # forward's program.
        block_size = self.kv_cache_spec.block_size
        blocks = self.block_table_cpu[request, : context // block_size].astype(np.int64)
        slots = blocks[:, :, None] * block_size + np.arange(block_size)
        return QueryGroup(
            token=self._upload(token),
            position=self._upload(position),
            slots=self._upload(slots.reshape(len(request), context)),
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

    def _rows(self, kv_cache: torch.Tensor) -> tuple[torch.Tensor, int]:
        """The cache as rows, and the row of this layer's first slot in them.

        vLLM places every layer's cache in one allocation. The rows span all of it when the
        layer's rows are whole rows of it: written through a view of one layer's part, the
        update is lowered as that part's copy, scattered and written back (57-66 ms a step
        for a 256 MiB cache on XLA:CPU); over the whole allocation it is a scatter in place."""
        blocks, heads, block_size, content = kv_cache.shape
        rows = kv_cache.permute(0, 2, 1, 3)
        row = heads * content
        first, partial = divmod(kv_cache.storage_offset(), row)
        if not rows.is_contiguous() or partial:
            return rows.reshape(blocks * block_size, heads, content), 0
        total = kv_cache.untyped_storage().nbytes() // (row * kv_cache.element_size())
        return kv_cache.as_strided((total, heads, content), (row, content, 1), 0), first

    def do_kv_cache_update(self, layer, key, value, kv_cache, slot_mapping) -> None:
        # Padding tokens (slot -1) write to the layer's row 0, in vLLM's null block.
        n = slot_mapping.shape[0]
        rows, first = self._rows(kv_cache)
        rows.index_copy_(
            0, slot_mapping.long().clamp(min=0) + first, torch.cat([key[:n], value[:n]], dim=-1)
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
        rows, first = self._rows(kv_cache)
        outputs = [self._attend(query, rows, first, g) for g in attn_metadata.groups]
        joined = outputs[0] if len(outputs) == 1 else torch.cat(outputs)
        n = attn_metadata.source.shape[0]
        output[:n] = joined.index_select(0, attn_metadata.source).view_as(output[:n])
        return output

    def _attend(self, query, rows, first, group: QueryGroup) -> torch.Tensor:
        """[rows · width, heads, head_size]: each query row over its request's context."""
        n, width = group.token.shape
        context = group.slots.shape[1]
        kv_heads, per_kv = self.num_kv_heads, self.num_heads // self.num_kv_heads
        d = self.head_size
        # Query head h reads kv head h // per_kv: the query heads of one kv head are adjacent.
        q = query.index_select(0, group.token.reshape(-1)).view(n, width, kv_heads, per_kv, d)
        q = q.permute(0, 2, 3, 1, 4).reshape(n, kv_heads, per_kv * width, d)
        kv = rows.index_select(0, group.slots.reshape(-1) + first)
        kv = kv.view(n, context, kv_heads, 2 * d)
        k = kv[..., :d].transpose(1, 2)  # [n, kv_heads, context, d]
        v = kv[..., d:].transpose(1, 2)
        few = per_kv * width <= 8
        if few:
            # A few query rows per kv head (decodes): products summed in one loop over the
            # cache rows as they lie. As matmuls, XLA:CPU copies K transposed and packs it for
            # a matrix-vector product per row and head, several times slower.
            scores = (q.float().unsqueeze(3) * k.float().unsqueeze(2)).sum(-1) * self.scale
        else:
            scores = torch.matmul(q, k.transpose(2, 3)).float() * self.scale
        if self.logits_soft_cap:
            scores = self.logits_soft_cap * torch.tanh(scores / self.logits_soft_cap)
        positions = torch.arange(context, device=query.device)  # of the context's cache rows
        query_position = group.position[:, None, None, :].expand(n, 1, per_kv, width)
        query_position = query_position.reshape(n, 1, per_kv * width, 1)
        allowed = positions <= query_position
        if self.sliding_window is not None:
            allowed &= positions > query_position - self.sliding_window
        probs = torch.softmax(scores.masked_fill(~allowed, float("-inf")), dim=-1).to(v.dtype)
        if few:
            out = (probs.float().unsqueeze(-1) * v.float().unsqueeze(2)).sum(-2).to(v.dtype)
        else:
            out = torch.matmul(probs, v)
        out = out.view(n, kv_heads, per_kv, width, d)
        return out.permute(0, 3, 1, 2, 4).reshape(n * width, self.num_heads, d)
