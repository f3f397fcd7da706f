"""PyTorch versions of the Triton kernels vLLM's model runner launches (Triton has no backend for
`tpu`), registered through vLLM's kernel dispatcher by the platform. They run as tpu ops."""

import torch


def compute_slot_mapping(
    num_tokens: int,
    max_num_tokens: int,
    query_start_loc: torch.Tensor,  # [requests + 1]
    positions: torch.Tensor,  # [tokens]
    block_table: torch.Tensor,  # [max requests, max blocks per request]
    block_table_stride: int,
    slot_mapping: torch.Tensor,  # [max tokens], out
    KV_CACHE_BLOCK_SIZE: int,
    TOTAL_CP_WORLD_SIZE: int = 1,
    TOTAL_CP_RANK: int = 0,
    CP_KV_CACHE_INTERLEAVE_SIZE: int = 1,
    PAD_ID: int = -1,
    BLOCK_SIZE: int = 1024,
) -> None:
    """The KV-cache row of each token: its request's block at position // block size, and the
    offset in it; rows past the step's tokens are PAD_ID."""
    if TOTAL_CP_WORLD_SIZE != 1:
        raise NotImplementedError("context parallelism is not supported on tpu")
    tokens = torch.arange(num_tokens, device=positions.device)
    request = torch.searchsorted(query_start_loc[1:].long(), tokens, right=True)
    pos = positions[:num_tokens].long()
    table = block_table.reshape(-1, block_table_stride)
    block = table[request, pos // KV_CACHE_BLOCK_SIZE].long()
    slot_mapping[:num_tokens] = block * KV_CACHE_BLOCK_SIZE + pos % KV_CACHE_BLOCK_SIZE
    slot_mapping[num_tokens:max_num_tokens] = PAD_ID


OVERRIDES = {
    "vllm.v1.worker.block_table.ComputeSlotMappingKernel.kernel": compute_slot_mapping,
}
