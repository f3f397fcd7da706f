"""Made-up requests that a model runner serves at start-up, through vLLM's own step.

The forward's buckets are run by `TpuModelRunner.compile_buckets`; the graphs around it (vLLM's
input preparation, the logits and the sampler) are shaped by the number of requests and tokens
and turn dynamic in torch_tpu's automatic dynamism: compiled exactly at a first size, then once
per dynamism bucket and pattern of equal sizes. These steps run them at every token bucket and
at several numbers of requests, for greedy and for random sampling, so that serving meets few
new ones (which ones is not predictable: a coincidence of two sizes compiles its own program).
"""

from vllm.sampling_params import SamplingParams
from vllm.v1.core.sched.output import CachedRequestData, NewRequestData, SchedulerOutput

# Greedy, and what vLLM's benchmarks and OpenAI defaults ask for.
SAMPLINGS = (SamplingParams(temperature=0.0), SamplingParams(temperature=1.0, top_p=1.0))


def _output(new=(), cached=None, scheduled=None, finished=()):
    scheduled = scheduled or {}
    return SchedulerOutput(
        scheduled_new_reqs=list(new),
        scheduled_cached_reqs=cached or CachedRequestData.make_empty(),
        num_scheduled_tokens=scheduled,
        total_num_scheduled_tokens=sum(scheduled.values()),
        scheduled_spec_decode_tokens={},
        scheduled_encoder_inputs={},
        finished_req_ids=set(finished),
        free_encoder_mm_hashes=[],
        num_common_prefix_blocks=[0],
    )


def _step(runner, scheduler_output):
    if runner.execute_model(scheduler_output) is None:
        runner.sample_tokens(None)


def batch_sizes(max_requests, token_buckets, max_len):
    """(requests, prompt length) pairs: a prefill filling each token bucket of the forward past
    the one below (the logits read the forward's padded output), then batches of 2, 4, 8, …
    requests, so that the graphs sized by the number of requests vary inside their dynamism
    buckets as they do while serving."""
    max_prompt = max_len - 2  # room for the decode step
    sizes = [(1, 2)]
    for tokens in token_buckets[1:]:
        requests = min(max_requests, -(-tokens // max_prompt))
        sizes.append((requests, min(max_prompt, tokens // requests)))
    requests = 2
    while requests < max_requests:
        sizes.append((requests, 3))
        requests *= 2
    sizes.append((max_requests, 3))
    return list(dict.fromkeys(sizes))


def serve_made_up_requests(runner) -> None:
    """Prefills, decodes one token and finishes batches of requests whose KV cache is vLLM's
    null block (block 0, owned by no request)."""
    config = runner.vllm_config
    block_size = config.cache_config.block_size
    sizes = batch_sizes(
        config.scheduler_config.max_num_seqs,
        runner.step_buckets.tokens,
        config.model_config.max_model_len,
    )
    for s, params in enumerate(SAMPLINGS):
        for requests, prompt_len in sizes:
            ids = [f"torch-tpu-warm-up-{s}-{requests}-{i}" for i in range(requests)]
            blocks = ([0] * -(-(prompt_len + 1) // block_size),)
            new = [
                NewRequestData(
                    req_id=i,
                    prompt_token_ids=[0] * prompt_len,
                    mm_features=[],
                    sampling_params=params,
                    pooling_params=None,
                    block_ids=blocks,
                    num_computed_tokens=0,
                    lora_request=None,
                )
                for i in ids
            ]
            _step(runner, _output(new=new, scheduled=dict.fromkeys(ids, prompt_len)))
            decode = CachedRequestData(
                req_ids=ids,
                resumed_req_ids=set(),
                new_token_ids=[[] for _ in ids],
                all_token_ids={},
                new_block_ids=[None for _ in ids],
                num_computed_tokens=[prompt_len] * requests,
                num_output_tokens=[1] * requests,
            )
            _step(runner, _output(cached=decode, scheduled=dict.fromkeys(ids, 1)))
            _step(runner, _output(finished=ids))
