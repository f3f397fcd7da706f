"""transformers' multi-device paths on tpu under torchrun (workers in tests/distributed/hf_*.py):
tensor parallelism with tp_plan="auto", and Trainer with DDP over tpu_dist. Models are built from
small configs (no hub downloads)."""

import pytest
from test_distributed import torchrun
from test_huggingface import _llama


@pytest.fixture
def tiny_llama_dir(tmp_path):
    """test_huggingface's tiny Llama, saved once here so that every rank loads the same weights."""
    _llama().save_pretrained(tmp_path)
    return str(tmp_path)


# Strict mode only, to keep both under ~60 s on two cores; both workers also pass with
# TORCH_TPU_EAGER_MODE=fused.
def test_tensor_parallel_auto_plan_equals_single_device(tiny_llama_dir):
    torchrun("hf_tensor_parallel.py", 2, env={"MODEL_DIR": tiny_llama_dir})


def test_trainer_ddp_equals_single_process_full_batch(tiny_llama_dir):
    torchrun("hf_trainer.py", 2, env={"MODEL_DIR": tiny_llama_dir})
