"""The few shapes a vLLM step runs at on `tpu`, so that serving compiles nothing after start-up.

A step's token count is padded to a token bucket, and the context its attention reads to a context
bucket; its requests' query rows form up to two groups whose sizes follow from the token bucket
(see attention.py). Every combination is compiled while the server starts (model_runner.py).
"""

from dataclasses import dataclass


def _doubling(first: int, last: int, step: int) -> tuple[int, ...]:
    """first, 2·first, 4·first, … below `last`, then `last`; all rounded up to `step`."""
    sizes, size = [], first
    while size < last:
        sizes.append(-(-size // step) * step)
        size *= 2
    sizes.append(-(-last // step) * step)
    return tuple(sorted(set(sizes)))


def _pad(size: int, buckets: tuple[int, ...], what: str) -> int:
    for bucket in buckets:
        if size <= bucket:
            return bucket
    raise ValueError(f"{what} {size} exceeds the largest bucket, {buckets[-1]}")


@dataclass(frozen=True)
class StepBuckets:
    tokens: tuple[int, ...]  # a step's padded token counts, up to max_num_batched_tokens
    contexts: tuple[int, ...]  # padded context lengths, whole KV blocks, up to max_model_len
    max_requests: int  # max_num_seqs
    tile: int  # query rows of a prefill tile

    @classmethod
    def from_config(cls, vllm_config, tile: int = 32) -> "StepBuckets":
        block_size = vllm_config.cache_config.block_size
        max_tokens = vllm_config.scheduler_config.max_num_batched_tokens
        max_len = vllm_config.model_config.max_model_len
        return cls(
            tokens=_doubling(min(8, max_tokens), max_tokens, 1),
            contexts=_doubling(min(128, max_len), max_len, block_size),
            max_requests=vllm_config.scheduler_config.max_num_seqs,
            tile=tile,
        )

    def pad_tokens(self, num_tokens: int) -> int:
        return _pad(num_tokens, self.tokens, "A step of")

    def pad_context(self, seq_len: int) -> int:
        return _pad(seq_len, self.contexts, "A context of")

    def decode_rows(self, padded_tokens: int) -> int:
        """Rows for the step's one-token requests: one each, as many as there can be."""
        return min(padded_tokens, self.max_requests)

    def prefill_tiles(self, padded_tokens: int) -> int:
        """Tiles for the step's longer requests (each of 2 tokens or more): one per `tile` tokens,
        plus one partly filled tile per request."""
        return -(-padded_tokens // self.tile) + min(self.max_requests, padded_tokens // 2)
