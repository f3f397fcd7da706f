"""torchrun worker: transformers' Trainer trains a tiny Llama with DDP over tpu_dist, and its losses
and final parameters equal a single-process Trainer on the full batch (run by every rank first).

accelerate (1.16) has no distributed type for `tpu`: for any accelerator outside its own list it
falls back to a single process (DistributedType.NO), so a plain Trainer under torchrun would
train every rank alone on the whole dataset. Its generic multi-process path is MULTI_CPU, whose
device ACCELERATE_TORCH_DEVICE overrides and whose process group is used as is when already
initialized. So, before TrainingArguments:

    dist.init_process_group("cpu:gloo,tpu:tpu_dist")   # tpu tensors reduce through tpu_dist
    os.environ["ACCELERATE_TORCH_DEVICE"] = "tpu:0"     # one tpu device per process, index 0
    accelerate.PartialState(cpu=True)                   # MULTI_CPU: DDP and sharded dataloaders
    TrainingArguments(..., use_cpu=False, accelerator_config={"use_configured_state": True})

Trainer then wraps the model (on tpu) in DistributedDataParallel (find_unused_parameters=True,
its default) and gives each rank its part of every batch.

Environment: MODEL_DIR (a tiny Llama checkpoint), TORCH_TPU_EAGER_MODE."""

import os
import tempfile

import torch
import torch.distributed as dist
from accelerate import PartialState
from accelerate.state import AcceleratorState
from common import check, finish
from transformers import LlamaForCausalLM, Trainer, TrainingArguments

MODEL_DIR = os.environ["MODEL_DIR"]
BATCH, STEPS = 4, 4  # global batch; BATCH * STEPS samples, one epoch

dist.init_process_group("cpu:gloo,tpu:tpu_dist")
rank, size = dist.get_rank(), dist.get_world_size()

gen = torch.Generator().manual_seed(0)
DATA = [{"input_ids": torch.randint(1, 64, (12,), generator=gen)} for _ in range(BATCH * STEPS)]
for row in DATA:
    row["labels"] = row["input_ids"].clone()


def train(per_device_batch, accumulation=1, **kwargs):
    """Trains the checkpoint for one epoch; returns the logged losses, the trainer and the
    final parameters on CPU."""
    model = LlamaForCausalLM.from_pretrained(MODEL_DIR)
    with tempfile.TemporaryDirectory() as out:
        args = TrainingArguments(
            output_dir=out,
            per_device_train_batch_size=per_device_batch,
            gradient_accumulation_steps=accumulation,
            num_train_epochs=1,
            learning_rate=1e-2,
            report_to=[],
            logging_steps=1,
            save_strategy="no",
            use_cpu=False,
            disable_tqdm=True,
            seed=0,
            **kwargs,
        )
        trainer = Trainer(model=model, args=args, train_dataset=DATA)
        trainer.train()
    losses = [h["loss"] for h in trainer.state.log_history if "loss" in h]
    params = {name: p.detach().cpu() for name, p in model.named_parameters()}
    return losses, trainer, params


# The reference: one process (accelerate's default for tpu), the whole global batch per step.
REF_LOSSES, ref_trainer, REF_PARAMS = train(BATCH)
assert ref_trainer.args.world_size == 1 and ref_trainer.args.device.type == "tpu"


def distributed_state():
    """The configured accelerate state for DDP on tpu (see the module docstring)."""
    AcceleratorState._reset_state(reset_partial_state=True)
    os.environ["ACCELERATE_TORCH_DEVICE"] = "tpu:0"
    PartialState(cpu=True)
    return {"accelerator_config": {"use_configured_state": True}}


def compare(losses, params):
    assert len(losses) == STEPS, losses
    torch.testing.assert_close(torch.tensor(losses), torch.tensor(REF_LOSSES), rtol=1e-4, atol=1e-4)
    for name, value in params.items():
        torch.testing.assert_close(
            value, REF_PARAMS[name], rtol=2e-4, atol=2e-4, msg=lambda m, name=name: f"{name}: {m}"
        )
        # DDP keeps the replicas identical: every rank holds rank 0's values exactly.
        mine = value.to("tpu")
        theirs = mine.clone()
        dist.broadcast(theirs, src=0)
        assert torch.equal(mine.cpu(), theirs.cpu()), f"{name} differs from rank 0"


@check("DDP Trainer equals single-process training on the full batch")
def _():
    from torch.nn.parallel import DistributedDataParallel as DDP

    losses, trainer, params = train(BATCH // size, **distributed_state())
    args = trainer.args
    assert args.parallel_mode.value == "distributed" and args.world_size == size, args.parallel_mode
    assert args.process_index == rank and args.device == torch.device("tpu", 0)
    assert isinstance(trainer.model_wrapped, DDP), type(trainer.model_wrapped)
    assert next(trainer.model.parameters()).device.type == "tpu"
    compare(losses, params)


@check("DDP Trainer with gradient accumulation (no_sync) equals it too")
def _():
    losses, _, params = train(BATCH // size // 2, accumulation=2, **distributed_state())
    compare(losses, params)


finish()
