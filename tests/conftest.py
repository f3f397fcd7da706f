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


@pytest.fixture
def small_buckets():
    """Buckets 16, 32, 64 (edges at small sizes), from no program compiled and no size recorded,
    the disk cache off: an exact program compiled earlier for one of a test's sizes would run
    instead of the bucketed one (docs/dynamic_shapes.md)."""
    torch_tpu._C._forget_varied_sizes()
    torch_tpu._C._cache_clear()
    directory = torch_tpu.cache.directory()
    torch_tpu.cache.disable()
    torch_tpu.dynamism.enable()
    torch_tpu.dynamism.set_buckets(minimum=16)
    yield
    torch_tpu.dynamism.set_buckets()
    if directory:
        torch_tpu.cache.enable(directory)
