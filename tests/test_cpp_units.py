"""Runs the C++ unit tests of the torch-free layers (runtime, ir, lowering, exec) through
scripts/cpp_tests.sh, which builds them incrementally and runs them on the XLA:CPU plugin."""

import os
import re
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SCRIPT = os.path.join(ROOT, "scripts", "cpp_tests.sh")


def test_cpp_unit_tests_pass():
    env = dict(os.environ)
    env.setdefault("PYTHON", sys.executable)  # the interpreter that has xla-cpu-pjrt installed
    proc = subprocess.run(
        ["bash", SCRIPT],
        cwd=ROOT,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        timeout=1800,  # a cold build compiles every layer on two cores
    )
    output = proc.stdout
    assert proc.returncode == 0, f"scripts/cpp_tests.sh exited with {proc.returncode}:\n{output}"
    lines = [l for l in output.splitlines() if l.strip()]
    summary = re.fullmatch(r"(\d+) passed, (\d+) failed", lines[-1] if lines else "")
    assert summary, f"no 'N passed, M failed' line at the end of the output:\n{output}"
    assert int(summary.group(2)) == 0 and int(summary.group(1)) > 0, output
