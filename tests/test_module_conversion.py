"""nn.Module conversions (.to("tpu"), .tpu(), .half(), .to("cpu")) keep every Parameter object, as
they do for CUDA: tied weights stay tied, earlier references (optimizers) stay valid, and a tied
model trains on tpu exactly as on CPU in every eager mode."""

import copy

import pytest
import torch
from models import GPT

import torch_tpu


def tied_gpt():
    torch.manual_seed(0)
    model = GPT(vocab=64, width=32, layers=1, heads=2, context=16)
    model.head.weight = model.tok.weight  # tied input and output embeddings (GPT-2, T5, BERT)
    return model


def params_by_name(model):
    return dict(model.named_parameters(remove_duplicate=False))


def test_conversions_keep_every_parameter_object():
    model = torch.nn.Sequential(torch.nn.Linear(4, 3), torch.nn.BatchNorm1d(3))
    before = params_by_name(model)
    for convert in (
        lambda m: m.to("tpu"),
        lambda m: m.half(),
        lambda m: m.to(torch.float32),
        lambda m: m.tpu(),
        lambda m: m.to("cpu"),
        lambda m: m.to("tpu", torch.bfloat16),
    ):
        assert convert(model) is model
        after = params_by_name(model)
        assert all(after[name] is p for name, p in before.items())
        assert all(isinstance(p, torch.nn.Parameter) and p.is_leaf for p in after.values())
    assert model[0].weight.device.type == "tpu" and model[0].weight.dtype == torch.bfloat16
    assert model[1].running_mean.device.type == "tpu"


def test_gradients_move_with_their_parameters():
    layer = torch.nn.Linear(3, 2)
    layer(torch.randn(5, 3)).sum().backward()
    weight, grad = layer.weight, layer.weight.grad.clone()
    layer.to("tpu")
    assert layer.weight is weight and layer.weight.grad.device.type == "tpu"
    torch.testing.assert_close(layer.weight.grad.cpu(), grad)


def test_shallow_copy_compatibility():
    cpu, tpu = torch.ones(2), torch.ones(2, device="tpu")
    assert torch._has_compatible_shallow_copy_type(cpu, tpu)
    assert torch._has_compatible_shallow_copy_type(tpu, cpu)
    assert torch._has_compatible_shallow_copy_type(tpu, tpu.double())
    assert not torch._has_compatible_shallow_copy_type(tpu, cpu.to_sparse())


def train(model, opt, device, steps=3):
    torch.manual_seed(1)
    losses = []
    for _ in range(steps):
        idx = torch.randint(0, 64, (2, 16))
        loss = model(idx.to(device), idx.roll(1, dims=1).to(device))
        opt.zero_grad()
        loss.backward()
        opt.step()
        losses.append(loss.item())
    return losses


@pytest.mark.parametrize("mode", ["strict", "debug", "fused"])
def test_tied_weights_stay_tied_and_train_as_on_cpu(mode):
    cpu_model = tied_gpt()
    tpu_model = copy.deepcopy(cpu_model)
    # The optimizer is made before the move, as people do: it must keep training the same objects.
    cpu_opt = torch.optim.SGD(cpu_model.parameters(), lr=0.1, momentum=0.9)
    tpu_opt = torch.optim.SGD(tpu_model.parameters(), lr=0.1, momentum=0.9)
    embedding = tpu_model.tok.weight
    with torch_tpu.eager_mode(mode):
        tpu_model.to("tpu")
        assert tpu_model.head.weight is tpu_model.tok.weight is embedding
        assert embedding.device.type == "tpu"
        tpu_losses = train(tpu_model, tpu_opt, "tpu")
    cpu_losses = train(cpu_model, cpu_opt, "cpu")
    torch.testing.assert_close(tpu_losses, cpu_losses, rtol=1e-5, atol=1e-5)
    assert tpu_model.head.weight is tpu_model.tok.weight
    for (name, p_tpu), p_cpu in zip(tpu_model.named_parameters(), cpu_model.parameters()):
        assert p_tpu.device.type == "tpu", name
        torch.testing.assert_close(p_tpu.detach().cpu(), p_cpu.detach(), rtol=1e-5, atol=1e-5)
