"""Shared pytest setup: tests import op_check/models from this folder; op test modules run in
every eager mode through the `each_mode` fixture."""

import os
import sys

import pytest

sys.path.insert(0, os.path.dirname(__file__))

import torch  # noqa: E402

import torch_tpu  # noqa: E402

# The default suite runs op tests in all three modes; TORCH_TPU_TEST_MODES narrows that.
MODES = os.environ.get("TORCH_TPU_TEST_MODES", "strict,debug,fused").split(",")


@pytest.fixture(params=MODES)
def each_mode(request):
    with torch_tpu.eager_mode(request.param):
        yield request.param
    torch.tpu.synchronize()


@pytest.fixture(scope="session", autouse=True)
def private_disk_cache(tmp_path_factory):
    """The suite compiles into its own empty disk cache: entries from earlier runs (of the same
    build) would turn compiles into disk hits and change what the cache and recompile tests
    see. Tests of the disk cache itself point it elsewhere."""
    torch_tpu.cache.enable(tmp_path_factory.mktemp("torch_tpu_cache"))
    yield
