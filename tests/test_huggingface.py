"""The Hugging Face stack on tpu against the same code on CPU: transformers generation (greedy,
sampled, static cache under torch.compile), tied embeddings, Trainer, pipeline, attention
implementations, MoE experts; accelerate; diffusers pipelines. Models are built from small
configs (no hub downloads)."""

import tempfile

import accelerate
import diffusers
import numpy as np
import pytest
import torch
from op_check import assert_same
from transformers import (
    GPT2Config,
    GPT2LMHeadModel,
    LlamaConfig,
    LlamaForCausalLM,
    MixtralConfig,
    MixtralForCausalLM,
)


def _llama(seed=0, **kw):
    torch.manual_seed(seed)
    cfg = LlamaConfig(
        vocab_size=64,
        hidden_size=32,
        intermediate_size=64,
        num_hidden_layers=2,
        num_attention_heads=4,
        num_key_value_heads=2,
        max_position_embeddings=64,
        pad_token_id=0,
        **kw,
    )
    return LlamaForCausalLM(cfg).eval()


def _prompt():
    return torch.randint(1, 64, (2, 6), generator=torch.Generator().manual_seed(3))


def test_greedy_and_static_cache_generation_match_cpu():
    import torch._dynamo.utils

    model, ids = _llama(), _prompt()
    expected = model.generate(ids, max_new_tokens=8, do_sample=False)
    model.to("tpu")
    eager = model.generate(ids.to("tpu"), max_new_tokens=8, do_sample=False)
    assert_same(eager, expected)
    # A static cache makes transformers compile the forward with its default config for tpu
    # (the `tpu` backend, static shapes).
    torch._dynamo.utils.counters.clear()
    static = model.generate(
        ids.to("tpu"), max_new_tokens=8, do_sample=False, cache_implementation="static"
    )
    assert torch._dynamo.utils.counters["stats"]["unique_graphs"] >= 1
    assert_same(static, expected)


def test_sampled_generation():
    model, ids = _llama(), _prompt()
    greedy = model.generate(ids, max_new_tokens=6, do_sample=False)
    model.to("tpu")
    ids = ids.to("tpu")

    def sample(seed, **kw):
        torch.manual_seed(seed)
        return model.generate(ids, max_new_tokens=6, do_sample=True, **kw).cpu()

    a, b = sample(1, temperature=1.5), sample(1, temperature=1.5)
    assert torch.equal(a, b)  # reproducible under the seed
    assert ((a >= 0) & (a < 64)).all() and a.shape == greedy.shape
    assert any(not torch.equal(sample(s, temperature=1.5), a) for s in (2, 3, 4))
    # top_k=1 leaves one candidate: sampling must give the greedy tokens.
    assert torch.equal(sample(5, top_k=1), greedy)
    assert sample(6, top_p=0.9, top_k=20, temperature=0.7).shape == greedy.shape


def test_tied_embeddings_train_like_cpu():
    torch.manual_seed(0)
    cfg = GPT2Config(
        vocab_size=50,
        n_embd=32,
        n_layer=2,
        n_head=4,
        n_positions=32,
        tie_word_embeddings=True,
        bos_token_id=0,
        eos_token_id=0,
        resid_pdrop=0.0,  # no dropout: CPU and tpu draw different masks
        embd_pdrop=0.0,
        attn_pdrop=0.0,
    )
    cpu = GPT2LMHeadModel(cfg)
    tpu = GPT2LMHeadModel(cfg)
    tpu.load_state_dict(cpu.state_dict())
    tpu.to("tpu")
    assert tpu.lm_head.weight is tpu.transformer.wte.weight
    ids = torch.randint(0, 50, (3, 10), generator=torch.Generator().manual_seed(1))
    for model, x in ((cpu, ids), (tpu, ids.to("tpu"))):
        opt = torch.optim.SGD(model.parameters(), lr=0.5)
        for _ in range(3):
            opt.zero_grad()
            model(x, labels=x).loss.backward()
            opt.step()
    assert_same(tpu.transformer.wte.weight, cpu.transformer.wte.weight, atol=1e-4, rtol=1e-4)
    assert tpu.lm_head.weight is tpu.transformer.wte.weight


def _train(use_cpu, bf16=False):
    from transformers import Trainer, TrainingArguments

    model = _llama()
    gen = torch.Generator().manual_seed(0)
    data = [{"input_ids": torch.randint(1, 64, (12,), generator=gen)} for _ in range(16)]
    for row in data:
        row["labels"] = row["input_ids"].clone()
    with tempfile.TemporaryDirectory() as out:
        args = TrainingArguments(
            output_dir=out,
            per_device_train_batch_size=4,
            num_train_epochs=1,
            learning_rate=1e-2,
            report_to=[],
            logging_steps=1,
            save_strategy="no",
            use_cpu=use_cpu,
            bf16=bf16,
            disable_tqdm=True,
            seed=0,
        )
        trainer = Trainer(model=model, args=args, train_dataset=data)
        trainer.train()
    losses = [h["loss"] for h in trainer.state.log_history if "loss" in h]
    return args.device, next(model.parameters()).device, torch.tensor(losses)


def test_trainer_matches_cpu():
    device, param_device, losses = _train(use_cpu=False)
    assert device.type == "tpu" and param_device.type == "tpu"
    _, _, expected = _train(use_cpu=True)
    torch.testing.assert_close(losses, expected, atol=1e-4, rtol=1e-4)
    _, _, bf16 = _train(use_cpu=False, bf16=True)  # autocast to bfloat16 on tpu
    torch.testing.assert_close(bf16, expected, atol=2e-2, rtol=2e-2)


def test_text_generation_pipeline_matches_cpu():
    from tokenizers import Tokenizer, models, pre_tokenizers
    from transformers import PreTrainedTokenizerFast, pipeline

    vocab = {"[UNK]": 0, **{f"w{i}": i for i in range(1, 64)}}
    tok = Tokenizer(models.WordLevel(vocab, unk_token="[UNK]"))
    tok.pre_tokenizer = pre_tokenizers.Whitespace()
    tokenizer = PreTrainedTokenizerFast(tokenizer_object=tok, unk_token="[UNK]", pad_token="[UNK]")
    outs = {}
    for device in ("cpu", "tpu"):
        pipe = pipeline("text-generation", model=_llama(), tokenizer=tokenizer, device=device)
        assert pipe.device.type == device
        outs[device] = pipe("w1 w2 w3", max_new_tokens=5, do_sample=False)[0]["generated_text"]
    assert outs["tpu"] == outs["cpu"]


@pytest.mark.parametrize("attn", ["sdpa", "eager"])
def test_attention_implementations_bf16(attn):
    model = _llama(attn_implementation=attn).to(torch.bfloat16)
    ids = _prompt()
    mask = torch.ones_like(ids)
    mask[0, :2] = 0  # left padding
    expected = model(ids, attention_mask=mask).logits
    model.to("tpu")
    actual = model(ids.to("tpu"), attention_mask=mask.to("tpu")).logits
    assert_same(actual, expected, atol=3e-2, rtol=3e-2)


def test_moe_experts_match_cpu():
    torch.manual_seed(0)
    cfg = MixtralConfig(
        vocab_size=64,
        hidden_size=32,
        intermediate_size=64,
        num_hidden_layers=2,
        num_attention_heads=4,
        num_key_value_heads=2,
        num_local_experts=4,
        num_experts_per_tok=2,
    )
    cpu = MixtralForCausalLM(cfg)
    tpu = MixtralForCausalLM(cfg)
    tpu.load_state_dict(cpu.state_dict())
    tpu.to("tpu")
    ids = _prompt()
    expected = cpu(ids, labels=ids)
    expected.loss.backward()
    for impl in ("grouped_mm", "eager"):
        tpu.set_experts_implementation(impl)
        tpu.zero_grad()
        out = tpu(ids.to("tpu"), labels=ids.to("tpu"))
        out.loss.backward()
        assert_same(out.logits, expected.logits, atol=1e-5, rtol=1e-4)
        w_cpu = cpu.model.layers[0].mlp.experts.gate_up_proj
        w_tpu = tpu.model.layers[0].mlp.experts.gate_up_proj
        assert_same(w_tpu.grad, w_cpu.grad, atol=1e-5, rtol=1e-4)


def test_accelerate_selects_tpu_with_bf16():
    acc = accelerate.Accelerator(mixed_precision="bf16")
    assert acc.device.type == "tpu"
    model = torch.nn.Sequential(torch.nn.Linear(4, 8), torch.nn.ReLU(), torch.nn.Linear(8, 2))
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    model, opt = acc.prepare(model, opt)
    seen = []
    model[0].register_forward_hook(lambda m, i, o: seen.append(o.dtype))
    x = torch.randn(3, 4, device=acc.device)
    before = model[0].weight.detach().cpu().clone()
    with acc.autocast():
        loss = model(x).float().pow(2).mean()
    acc.backward(loss)
    opt.step()
    assert seen == [torch.bfloat16]
    assert model[0].weight.device.type == "tpu" and model[0].weight.dtype == torch.float32
    assert not torch.equal(model[0].weight.detach().cpu(), before)


def test_diffusers_unet2d_pipeline():
    torch.manual_seed(0)
    unet = diffusers.UNet2DModel(
        sample_size=8,
        in_channels=3,
        out_channels=3,
        layers_per_block=1,
        block_out_channels=(8, 16),
        down_block_types=("DownBlock2D", "AttnDownBlock2D"),
        up_block_types=("AttnUpBlock2D", "UpBlock2D"),
        norm_num_groups=4,
    )
    pipe = diffusers.DDPMPipeline(
        unet=unet, scheduler=diffusers.DDPMScheduler(num_train_timesteps=10)
    )
    pipe.set_progress_bar_config(disable=True)

    def run(generator):
        return pipe(generator=generator, num_inference_steps=5, output_type="np").images

    expected = run(torch.Generator("cpu").manual_seed(0))
    pipe.to("tpu")
    # The same noise (drawn on CPU): the same image.
    np.testing.assert_allclose(run(torch.Generator("cpu").manual_seed(0)), expected, atol=1e-5)
    # Noise from the tpu generator: deterministic under its seed.
    a = run(torch.Generator("tpu").manual_seed(0))
    b = run(torch.Generator("tpu").manual_seed(0))
    assert np.array_equal(a, b) and not np.array_equal(
        a, run(torch.Generator("tpu").manual_seed(1))
    )


def test_diffusers_conditional_unet_pipeline():
    torch.manual_seed(0)
    unet = diffusers.UNet2DConditionModel(
        sample_size=8,
        in_channels=4,
        out_channels=4,
        layers_per_block=1,
        block_out_channels=(8, 16),
        down_block_types=("CrossAttnDownBlock2D", "DownBlock2D"),
        up_block_types=("UpBlock2D", "CrossAttnUpBlock2D"),
        cross_attention_dim=16,
        attention_head_dim=2,
        norm_num_groups=4,
    )
    vae = diffusers.AutoencoderKL(
        in_channels=3,
        out_channels=3,
        down_block_types=("DownEncoderBlock2D", "DownEncoderBlock2D"),
        up_block_types=("UpDecoderBlock2D", "UpDecoderBlock2D"),
        block_out_channels=(8, 16),
        latent_channels=4,
        norm_num_groups=4,
        sample_size=16,
    )
    pipe = diffusers.StableDiffusionPipeline(
        unet=unet,
        vae=vae,
        scheduler=diffusers.DDIMScheduler(num_train_timesteps=10),
        text_encoder=None,
        tokenizer=None,
        safety_checker=None,
        feature_extractor=None,
        requires_safety_checker=False,
    )
    pipe.set_progress_bar_config(disable=True)
    emb, neg = torch.randn(1, 5, 16), torch.randn(1, 5, 16)

    def run(device, generator):
        pipe.to(device)
        return pipe(
            prompt_embeds=emb.to(device),
            negative_prompt_embeds=neg.to(device),
            num_inference_steps=3,
            guidance_scale=2.0,
            generator=generator,
            output_type="np",
            height=16,
            width=16,
        ).images

    expected = run("cpu", torch.Generator("cpu").manual_seed(0))
    np.testing.assert_allclose(
        run("tpu", torch.Generator("cpu").manual_seed(0)), expected, atol=1e-5
    )
    a = run("tpu", torch.Generator("tpu").manual_seed(0))
    assert np.array_equal(a, run("tpu", torch.Generator("tpu").manual_seed(0)))
