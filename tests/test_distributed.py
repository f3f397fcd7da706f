"""torch.distributed on tpu (`tpu_dist`): registration in this process, and multi-process checks
run under torchrun (tests/distributed/*.py workers, each comparing with Gloo on CPU)."""

import os
import socket
import subprocess
import sys

import pytest
import torch
import torch.distributed as dist

import torch_tpu

WORKERS = os.path.join(os.path.dirname(__file__), "distributed")


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def torchrun(worker, nproc, timeout=300, env=None):
    """Runs a worker under torchrun on loopback; fails with every rank's output when it fails."""
    command = [
        sys.executable, "-m", "torch.distributed.run",
        f"--nproc-per-node={nproc}", "--master-addr=127.0.0.1", f"--master-port={free_port()}",
        os.path.join(WORKERS, worker),
    ]  # fmt: skip
    environment = dict(os.environ, GLOO_SOCKET_IFNAME="lo", **(env or {}))
    environment.setdefault("TORCH_TPU_CACHE_DIR", torch_tpu.cache.directory() or "")
    result = subprocess.run(
        command, capture_output=True, text=True, timeout=timeout, env=environment
    )
    output = result.stdout + result.stderr
    assert result.returncode == 0, output[-20000:]
    assert output.count("all checks passed") == nproc, output[-20000:]


@pytest.mark.parametrize("nproc", [2, 4])
def test_collectives_equal_gloo_on_cpu(nproc):
    torchrun("collectives.py", nproc)


def test_faults_raise_instead_of_hanging():
    torchrun("faults.py", 2)


@pytest.fixture
def single_process_group():
    """A one-rank world in this process (HashStore: nothing listens on a port)."""
    yield lambda **kw: dist.init_process_group(store=dist.HashStore(), rank=0, world_size=1, **kw)
    if dist.is_initialized():
        dist.destroy_process_group()


def test_tpu_dist_is_the_default_backend_of_tpu():
    assert dist.Backend.default_device_backend_map["tpu"] == "tpu_dist"
    assert dist.Backend.backend_capability["tpu_dist"] == ["tpu"]
    assert torch_tpu.distributed.transport() == "host-staged"


@pytest.mark.parametrize(
    "kwargs",
    [
        {"backend": "tpu_dist"},
        {"device_id": torch.device("tpu", 0)},
        {"backend": "cpu:gloo,tpu:tpu_dist"},
    ],
    ids=["name", "device_id", "mixed"],
)
def test_init_process_group_forms(single_process_group, kwargs):
    single_process_group(**kwargs)
    assert dist.get_backend_config() in ("tpu_dist", "tpu:tpu_dist", "cpu:gloo,tpu:tpu_dist")
    t = torch.arange(6.0, device="tpu").reshape(2, 3).t()
    dist.all_reduce(t)
    assert torch.equal(t.cpu(), torch.arange(6.0).reshape(2, 3).t())
    objects = [None]
    dist.all_gather_object(objects, {"rank": 0})
    assert objects == [{"rank": 0}]


def test_functional_collectives_eager_fused_and_compiled():
    torchrun("functional.py", 2)


@pytest.mark.parametrize(
    "nproc, parallel, env",
    [
        (2, "ddp,tp,fsdp,fsdp_no_reshard,fsdp_bf16", {}),
        (2, "ddp,tp,fsdp", {"TORCH_TPU_EAGER_MODE": "fused"}),
        (2, "ddp,tp,fsdp", {"COMPILE": "1"}),
        (4, "fsdp_tp", {}),
    ],
    ids=["strict", "fused", "compiled", "fsdp_x_tp"],
)
def test_training_equals_single_device(nproc, parallel, env):
    torchrun("training.py", nproc, env=dict(env, PARALLEL=parallel))


@pytest.mark.parametrize("nproc", [2, 4])
def test_dtensor_redistribute_sequence_parallel_loss_parallel(nproc):
    torchrun("dtensor.py", nproc)


def test_checkpoint_round_trip_and_2_to_4_resharding(tmp_path):
    env = {"CKPT_DIR": str(tmp_path)}
    torchrun("checkpoint.py", 2, env=dict(env, PHASE="save"))
    torchrun("checkpoint.py", 4, env=dict(env, PHASE="load"))


def test_in_program_collectives_equal_host_staged():
    """Rank 0 runs the in-program collectives over 4 local devices on all ranks' inputs."""
    torchrun("in_program_vs_host.py", 4, env={"TORCH_TPU_CPU_DEVICE_COUNT": "4"})
