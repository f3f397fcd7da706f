"""transformers' own model tests on `tpu`, measured against the same tests on CPU.

    python tools/hf_suite.py ../shared/hf-tests                      # every family in the tree
    python tools/hf_suite.py ../shared/hf-tests --families llama,gpt2
    python tools/hf_suite.py ../shared/hf-tests --extra tools/hf_testers --markdown docs/hf_compatibility.md

TREE is a transformers-style test tree (`tests/test_modeling_common.py`, `tests/models/<family>/`),
such as the one in ../shared/hf-tests (its README says where each file comes from). It is copied
to a scratch directory (the pipeline mixin looks for `src/transformers` beside `tests/`, which
becomes a link to the installed package); `--extra DIR` adds the testers in `DIR/models/<family>/`
(the project's own, for families the tree lacks). Each family runs twice under pytest,
`TRANSFORMERS_TEST_DEVICE=cpu` and `=tpu`, and the two JUnit reports are compared test by test:
the script prints, per family, the counts and every test that passes on CPU but fails or is
skipped on `tpu`, grouped by cause (the failure's first line with numbers and addresses
masked). `--markdown FILE` writes the same report as Markdown, keeping a hand-written section
that starts with "## Notes" at its end. The exit status is 1 when some
test passes on CPU and not on `tpu`.
"""

import argparse
import collections
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
import xml.etree.ElementTree as ET

NOTES = "## Notes"


def _scratch_tree(tree, extra):
    work = tempfile.mkdtemp(prefix="hf_suite_")
    shutil.copytree(tree, work, dirs_exist_ok=True, symlinks=True)
    if extra:
        shutil.copytree(
            os.path.join(extra, "models"), os.path.join(work, "tests", "models"), dirs_exist_ok=True
        )
    import transformers

    os.makedirs(os.path.join(work, "src"), exist_ok=True)
    link = os.path.join(work, "src", "transformers")
    if not os.path.exists(link):
        os.symlink(os.path.dirname(transformers.__file__), link)
    return work


def _families(work):
    models = os.path.join(work, "tests", "models")
    return sorted(
        d
        for d in os.listdir(models)
        if os.path.isdir(os.path.join(models, d)) and not d.startswith("__")
    )


def _run(work, family, device, timeout, pytest_args):
    report = os.path.join(work, f"{family}_{device}.xml")
    env = dict(
        os.environ, TRANSFORMERS_TEST_DEVICE=device, HF_HUB_OFFLINE="1", TRANSFORMERS_OFFLINE="1"
    )
    cmd = [sys.executable, "-m", "pytest", f"tests/models/{family}", "-q", "-p", "no:cacheprovider"]
    cmd += [f"--timeout={timeout}", f"--junitxml={report}", *pytest_args]
    start = time.time()
    subprocess.run(cmd, cwd=work, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    return _parse(report), time.time() - start


def _parse(report):
    """{test id: (outcome, first line of the message)} from a JUnit XML report."""
    results = {}
    if not os.path.exists(report):
        return results
    for case in ET.parse(report).getroot().iter("testcase"):
        name = f"{case.get('classname', '').rsplit('.', 1)[-1]}::{case.get('name')}"
        outcome, message = "passed", ""
        for child in case:
            if child.tag in ("failure", "error", "skipped"):
                outcome = "failed" if child.tag != "skipped" else "skipped"
                message = (child.get("message") or child.text or "").strip().splitlines()
                message = message[0] if message else ""
                break
        results[name] = (outcome, message)
    return results


def _cause(message):
    """The failure's first line with the details that differ between tests masked."""
    message = re.sub(r"0x[0-9a-f]+", "0x…", message)
    message = re.sub(r"\d+(\.\d+)?(e[-+]?\d+)?", "N", message)
    return message[:160] or "(no message)"


def _compare(cpu, tpu):
    counts = {
        dev: collections.Counter(o for o, _ in res.values())
        for dev, res in (("cpu", cpu), ("tpu", tpu))
    }
    regressions = collections.defaultdict(list)  # cause -> tests
    for name, (outcome, _) in sorted(cpu.items()):
        if outcome != "passed":
            continue
        t_outcome, t_message = tpu.get(name, ("missing", "did not run on tpu (crash or timeout)"))
        if t_outcome != "passed":
            regressions[f"{t_outcome}: {_cause(t_message)}"].append(name)
    # Tests CPU skips (accelerator-only tests) that run and fail on tpu: not part of the
    # measure, but listed.
    for name, (outcome, message) in sorted(tpu.items()):
        if outcome == "failed" and cpu.get(name, ("skipped",))[0] == "skipped":
            regressions[f"tpu only, failed: {_cause(message)}"].append(name)
    return counts, regressions


def _report(rows):
    lines = []
    total_cpu = total_ok = 0
    for family, counts, regressions, seconds in rows:
        cpu_passed = counts["cpu"]["passed"]
        lost = sum(len(v) for k, v in regressions.items() if not k.startswith("tpu only"))
        total_cpu += cpu_passed
        total_ok += cpu_passed - lost
        lines.append(
            f"## {family}: {cpu_passed - lost} of {cpu_passed} tests that pass on CPU pass on tpu"
            f" (cpu {dict(counts['cpu'])}, tpu {dict(counts['tpu'])}; {seconds:.0f} s)"
        )
        for cause, tests in sorted(regressions.items(), key=lambda kv: -len(kv[1])):
            lines.append(f"- {len(tests)} × {cause}")
            lines += [f"  - `{t}`" for t in tests]
        lines.append("")
    share = 100.0 * total_ok / total_cpu if total_cpu else 100.0
    lines.insert(
        0,
        f"# transformers model tests on tpu: {total_ok} of {total_cpu} CPU-passing tests pass ({share:.1f}%)\n",
    )
    return "\n".join(lines), total_ok == total_cpu


def main():
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("tree", help="transformers-style test tree (with tests/models/<family>/)")
    parser.add_argument("--extra", help="folder with more testers in models/<family>/")
    parser.add_argument("--families", help="comma-separated families (default: all in the tree)")
    parser.add_argument("--timeout", type=int, default=300, help="per-test timeout in seconds")
    parser.add_argument("--markdown", help="also write the report to this Markdown file")
    parser.add_argument("pytest_args", nargs="*", help="extra pytest arguments (after --)")
    args = parser.parse_args()

    work = _scratch_tree(os.path.abspath(args.tree), args.extra and os.path.abspath(args.extra))
    families = args.families.split(",") if args.families else _families(work)
    rows = []
    for family in families:
        cpu, cpu_s = _run(work, family, "cpu", args.timeout, args.pytest_args)
        tpu, tpu_s = _run(work, family, "tpu", args.timeout, args.pytest_args)
        counts, regressions = _compare(cpu, tpu)
        rows.append((family, counts, regressions, cpu_s + tpu_s))
        print(f"{family}: cpu {dict(counts['cpu'])} tpu {dict(counts['tpu'])}", flush=True)
    text, clean = _report(rows)
    print(text)
    if args.markdown:
        import transformers

        command = " ".join(["python tools/hf_suite.py", *sys.argv[1:]])
        # Hand-written analysis below NOTES survives regeneration.
        notes = ""
        if os.path.exists(args.markdown):
            with open(args.markdown) as f:
                old = f.read()
            if NOTES in old:
                notes = "\n" + old[old.index(NOTES) :]
        with open(args.markdown, "w") as f:
            f.write(
                text.replace(
                    "\n",
                    f"\nRegenerate: `{command}` (transformers {transformers.__version__}).\n",
                    1,
                )
            )
            f.write(
                "\nA test is counted when it passes on CPU; each family lists those that fail or are "
                "skipped on tpu by cause, and separately the accelerator-only tests (skipped on CPU) "
                "that fail on tpu.\n"
            )
            f.write(notes)
    shutil.rmtree(work, ignore_errors=True)
    sys.exit(0 if clean else 1)


if __name__ == "__main__":
    main()
