"""torchrun worker: transformers' tensor parallelism (`tp_plan="auto"`) on tpu. A tiny Llama saved
by the pytest side (MODEL_DIR) is loaded sharded over every rank; its logits, gradients and greedy
generation equal the same checkpoint without TP, on tpu in this process and on CPU.

transformers initializes the process group itself (its device map sends `tpu` to `tpu_dist`) and
binds each process to the accelerator's current index (one tpu device per process, index 0)."""

import os

import torch
import torch.distributed as dist
from common import assert_same, check, finish
from transformers import LlamaForCausalLM
from transformers.distributed import DistributedConfig

MODEL_DIR = os.environ["MODEL_DIR"]

model = LlamaForCausalLM.from_pretrained(
    MODEL_DIR, distributed_config=DistributedConfig(tp_plan="auto")
)
size = dist.get_world_size()
cpu_model = LlamaForCausalLM.from_pretrained(MODEL_DIR)
tpu_model = LlamaForCausalLM.from_pretrained(MODEL_DIR).to("tpu")

gen = torch.Generator().manual_seed(3)
ids = torch.randint(1, 64, (3, 7), generator=gen)
mask = torch.ones_like(ids)
mask[0, :2] = 0  # a left-padded row: the attention mask takes part too
ids[0, :2] = 0


@check("the model is sharded over a tpu mesh of every rank by tpu_dist")
def _():
    from torch.distributed.tensor import DTensor, Shard

    assert dist.get_backend() == "tpu_dist", dist.get_backend()
    assert model.tp_size == size
    attention = model.model.layers[0].self_attn
    for proj, dim in [(attention.q_proj, 0), (attention.o_proj, 1), (model.lm_head, 0)]:
        weight = proj.weight
        assert isinstance(weight, DTensor), type(weight)
        assert weight.device_mesh.device_type == "tpu" and weight.device_mesh.size() == size
        assert weight.placements == (Shard(dim),), weight.placements
        assert weight.to_local().device.type == "tpu"
        assert weight.to_local().shape[dim] * size == weight.shape[dim]


@check("logits equal the unsharded model on tpu and on CPU")
def _():
    with torch.no_grad():
        logits = model(ids.to("tpu"), attention_mask=mask.to("tpu")).logits
        expected_tpu = tpu_model(ids.to("tpu"), attention_mask=mask.to("tpu")).logits.cpu()
        expected_cpu = cpu_model(ids, attention_mask=mask).logits
    assert_same(logits, expected_cpu, exact=False, what="TP vs CPU")
    assert_same(logits, expected_tpu, exact=False, what="TP vs tpu")


def gradients(m, device):
    m.zero_grad(set_to_none=True)
    loss = m(ids.to(device), attention_mask=mask.to(device), labels=ids.to(device)).loss
    loss.backward()
    return loss.detach(), {
        name: (p.grad.full_tensor() if hasattr(p.grad, "full_tensor") else p.grad).cpu()
        for name, p in m.named_parameters()
    }


@check("loss and every parameter's gradient equal the unsharded model's")
def _():
    loss, grads = gradients(model, "tpu")
    expected_loss, expected = gradients(cpu_model, "cpu")
    tpu_loss, tpu_grads = gradients(tpu_model, "tpu")
    assert_same(loss, expected_loss, exact=False, what="loss vs CPU")
    assert_same(loss, tpu_loss.cpu(), exact=False, what="loss vs tpu")
    assert grads.keys() == expected.keys()
    for name, grad in grads.items():
        torch.testing.assert_close(grad, expected[name], rtol=1e-4, atol=1e-5, msg=name)
        torch.testing.assert_close(grad, tpu_grads[name], rtol=1e-4, atol=1e-5, msg=name)


@check("greedy generation equals CPU")
def _():
    prompt = ids[1:]  # unpadded rows
    expected = cpu_model.generate(prompt, max_new_tokens=5, do_sample=False)
    tokens = model.generate(prompt.to("tpu"), max_new_tokens=5, do_sample=False)
    assert_same(tokens, expected, exact=True, what="generated tokens")


finish()
