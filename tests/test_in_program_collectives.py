"""In-program collectives (torch_tpu.distributed.in_program) over 4 devices of one process.

This process has one device, so the checks (in_program_collectives_check.py) run once in a
subprocess with TORCH_TPU_CPU_DEVICE_COUNT=4; each case is its own test here, passing when the
subprocess reported it "ok" (every collective x ReduceOp x dtype against torch on CPU, groups,
non-contiguous inputs, the three eager modes, no recompilation, errors).
"""

import json
import os
import subprocess
import sys

import in_program_collectives_check as check
import pytest


@pytest.fixture(scope="module")
def report(tmp_path_factory):
    env = dict(
        os.environ,
        TORCH_TPU_CPU_DEVICE_COUNT=str(check.N),
        TORCH_TPU_CACHE_DIR=str(tmp_path_factory.mktemp("in_program_cache")),
    )
    proc = subprocess.run(
        [sys.executable, check.__file__], env=env, capture_output=True, text=True, timeout=300
    )
    assert proc.returncode == 0, (
        f"the check process failed:\n{proc.stdout[-3000:]}\n{proc.stderr[-5000:]}"
    )
    return json.loads(proc.stdout.strip().splitlines()[-1])


@pytest.mark.parametrize("case", check.case_names())
def test_in_program_collective(report, case):
    assert case in report, f"{case} did not run"
    assert report[case] == "ok", report[case]


def test_every_case_reported(report):
    assert sorted(report) == sorted(check.case_names())
