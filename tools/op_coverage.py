"""Operator coverage of the tpu device against PyTorch's OpInfo database.

    python tools/op_coverage.py                      # full sweep: every op_db entry, all dtypes, strict
    python tools/op_coverage.py --ops add,erfinv     # rerun some entries, merged into the results
    python tools/op_coverage.py --modes strict,fused --dtypes f32
    python tools/op_coverage.py --render             # only rewrite docs/op_coverage.md

Each entry runs through tests/op_conformance.py in a worker subprocess, so a crash or hang in one
entry costs only that entry (it is recorded as failing and the worker restarts after it). Results
are kept per entry in docs/op_coverage.json (a rerun of some entries replaces just those) and
rendered to docs/op_coverage.md together with the number of ATen overloads that have a
PrivateUse1 kernel.
"""

import argparse
import collections
import json
import os
import subprocess
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
TESTS = os.path.join(ROOT, "tests")
RESULTS = os.path.join(ROOT, "docs", "op_coverage.json")
DOC = os.path.join(ROOT, "docs", "op_coverage.md")
DTYPES = {"f32": "float32", "bf16": "bfloat16", "i64": "int64", "bool": "bool"}


def _import_harness():
    sys.path.insert(0, TESTS)
    import op_conformance

    return op_conformance


# --- worker ----------------------------------------------------------------------------------


def worker(args):
    import torch

    conf = _import_harness()
    dtypes = [getattr(torch, DTYPES[d]) for d in args.dtypes.split(",")]
    modes = args.modes.split(",")
    ids = [line.strip() for line in open(args.worker) if line.strip()]
    by_id = {conf.entry_id(op): op for op in conf.entries(set(ids))}
    with open(args.out, "a") as out:
        for eid in ids:
            out.write(json.dumps({"start": eid}) + "\n")
            out.flush()
            t0 = time.time()
            rec = conf.check_entry(
                by_id[eid], dtypes=dtypes, modes=modes, max_samples=args.max_samples
            )
            rec["seconds"] = round(time.time() - t0, 1)
            out.write(json.dumps(rec) + "\n")
            out.flush()


# --- driver ----------------------------------------------------------------------------------


def _read_jsonl(path):
    started, done = [], {}
    if os.path.exists(path):
        for line in open(path):
            try:
                rec = json.loads(line)
            except json.JSONDecodeError:
                continue  # a line cut by a crash
            if "start" in rec:
                started.append(rec["start"])
            else:
                done[rec["entry"]] = rec
    return started, done


def sweep(ids, args, tmpdir):
    """Runs the entries in worker subprocesses; returns {entry id: record}."""
    results = {}
    todo = list(ids)
    n_workers = 0
    while todo:
        chunk, todo = todo[: args.chunk], todo[args.chunk :]
        while chunk:
            n_workers += 1
            idfile = os.path.join(tmpdir, f"ids-{n_workers}.txt")
            outfile = os.path.join(tmpdir, f"out-{n_workers}.jsonl")
            with open(idfile, "w") as f:
                f.write("\n".join(chunk) + "\n")
            cmd = [sys.executable, os.path.abspath(__file__), "--worker", idfile, "--out", outfile]
            cmd += [
                "--modes",
                args.modes,
                "--dtypes",
                args.dtypes,
                "--max-samples",
                str(args.max_samples),
            ]
            proc = subprocess.Popen(
                cmd, stdout=subprocess.DEVNULL, stderr=open(outfile + ".err", "w")
            )
            last_start, last_t = None, time.time()
            killed = None
            while proc.poll() is None:
                time.sleep(0.5)
                started, _ = _read_jsonl(outfile)
                if started and started[-1] != last_start:
                    last_start, last_t = started[-1], time.time()
                if time.time() - last_t > args.entry_timeout:
                    proc.kill()
                    proc.wait()
                    killed = f"timeout: no result within {args.entry_timeout} s"
            started, done = _read_jsonl(outfile)
            for eid in done:
                results[eid] = done[eid]
                print(
                    f"[{len(results)}/{len(ids)}] {eid}: {_conf.entry_class(done[eid])}", flush=True
                )
            remaining = [e for e in chunk if e not in done]
            if not remaining:
                break
            if started and started[-1] in remaining:
                bad = started[-1]
                why = killed or f"worker died (exit code {proc.returncode})"
                results[bad] = {"entry": bad, "crash": why, "results": {}}
                print(f"[{len(results)}/{len(ids)}] {bad}: {why}", flush=True)
                remaining.remove(bad)
            elif proc.returncode:
                err = open(outfile + ".err").read()[-2000:]
                raise SystemExit(f"worker failed before any entry:\n{err}")
            chunk = remaining
    return results


# --- rendering -------------------------------------------------------------------------------


def registered_overloads():
    """ATen overloads with a PrivateUse1 kernel (the boxed fallback is not among them)."""
    import torch

    import torch_tpu  # noqa: F401

    regs = torch._C._dispatch_get_registrations_for_dispatch_key("PrivateUse1")
    aten = sorted(r for r in regs if r.startswith("aten::"))
    return aten, len(regs)


def _status(rec, mode, dtype, part):
    per = rec.get("results", {}).get(mode, {}).get(dtype, {})
    return per.get(part)


def _cell(r):
    if r is None:
        return ""
    return {"native": "ok", "fallback": "fallback", "fails": "FAIL", "skipped": "-"}[r["status"]]


def _first_error(rec, modes):
    if "skip" in rec:
        return "skipped: " + rec["skip"]
    if "crash" in rec:
        return rec["crash"]
    for mode in modes:
        for dt, per in rec.get("results", {}).get(mode, {}).items():
            for part, r in per.items():
                if r["status"] in ("fails", "fallback"):
                    extra = ""
                    if r["status"] == "fallback":
                        extra = (
                            " (passes with fallback: " + ", ".join(r.get("fallback_ops", [])) + ")"
                        )
                    return f"{mode} {dt} {part}: {r.get('error', '')}{extra}"
    return ""


def _md(text):
    return text.replace("|", "\\|").replace("\n", " ")


def render(results, meta):
    conf = _conf
    modes = meta["modes"]
    main = modes[0]
    loosened = [(k, d) for k in sorted(conf.LOOSENED) for d in conf.LOOSENED[k]]

    def closer(entry, dtype):
        return isinstance(_conf.LOOSENED[entry][dtype], _conf.CloserToFloat64)

    lines = [
        "# Operator coverage against PyTorch's OpInfo database",
        "",
        "Regenerate (full sweep, about 26 minutes on two cores; `--help` for subsets):",
        "",
        "    " + meta["command"],
        "",
        "Generated by `tools/op_coverage.py` from `docs/op_coverage.json`. Every entry of",
        "`torch.testing._internal.common_methods_invocations.op_db` runs its OpInfo samples (at most",
        f"{meta['max_samples']} per entry and dtype, spread over the list) on tpu and on CPU",
        "(`tests/op_conformance.py`, comparing with `tests/opinfo_check.py`): values, dtype, shape and",
        "device with torch.testing's default tolerances (or the entry's own toleranceOverride for",
        "PyTorch's CPU-comparison test); float32 also checks gradients (entries with autograd) and the",
        "out= variant (entries with `supports_out`). CI reruns a fixed subset of entries against this",
        "record (`tests/test_op_coverage.py`).",
        "",
        "Where a comparison with CPU cannot be exact by PyTorch's own definition, the harness compares",
        "what is defined instead:",
        "- indices among equal values (sort, argsort, topk, kthvalue, mode: implementation-defined; CPU",
        "  sorts unstably) compare through the values they name and must be valid",
        "  (`tests/tie_order.py`);",
        "- results PyTorch defines differently on CPU than on other devices (eval batch norm's saved",
        "  statistics, the dtype of layer/batch norm statistics for bf16 inputs) are checked against",
        "  their definition (`tests/device_results.py`);",
        "- loosened tolerances, each measured against a float64 evaluation with",
        "  `tools/rounding_error.py` (`LOOSENED` in `tests/op_conformance.py`): "
        + ", ".join(f"`{k}` {conf.DTYPE_NAMES[d]}" for k, d in loosened if not closer(k, d))
        + ";",
        "- reduced-precision entries whose CPU kernel accumulates in that precision, where every",
        "  element that differs from CPU's must be at least as close as CPU's to a float64",
        "  evaluation (`CloserToFloat64`): "
        + ", ".join(f"`{k}` {conf.DTYPE_NAMES[d]}" for k, d in loosened if closer(k, d))
        + ";",
        "- entries whose CPU result is wrong are skipped with the evidence (`CPU_WRONG`): "
        + ", ".join(
            f"`{k}` {conf.DTYPE_NAMES[d]}" for k, d in sorted(conf.CPU_WRONG, key=lambda kd: kd[0])
        )
        + ".",
        "",
        f"- torch {meta['torch']}; swept modes: {', '.join(modes)}; dtypes: {', '.join(meta['dtypes'])}.",
        "- Status: `ok` native (passes with the CPU fallback off, fallback counter unmoved);",
        "  `fallback` passes only with `torch_tpu.cpu_fallback()`; `FAIL`; `-` skipped (reason given).",
        "",
    ]
    aten, total_regs = meta["overloads"]
    lines += [
        "## Summary",
        "",
        "- ATen operator overloads with a PrivateUse1 kernel (dispatcher registrations, the CPU",
        f"  fallback not counted): **{len(aten)}** ({total_regs} registrations in all).",
    ]
    recs = [results[k] for k in sorted(results)]
    for mode in modes:
        counts = collections.Counter(_entry_class_mode(r, mode) for r in recs)
        lines.append(
            f"- {mode}: {len(recs)} entries: native {counts['native']}, fallback {counts['fallback']}, "
            f"fails {counts['fails']}, skipped {counts['skipped']}."
        )
        f32 = [
            r
            for r in recs
            if (_status(r, mode, "f32", "forward") or {}).get("status") not in (None, "skipped")
        ]
        fwd_ok = sum(1 for r in f32 if _status(r, mode, "f32", "forward")["status"] == "native")
        grad = [
            r
            for r in f32
            if (_status(r, mode, "f32", "backward") or {}).get("status") not in (None,)
        ]
        grad = [
            r
            for r in grad
            if _status(r, mode, "f32", "backward").get("reason") != "entry has no autograd"
        ]
        bwd_ok = sum(1 for r in grad if _status(r, mode, "f32", "backward")["status"] == "native")
        outs = [
            r
            for r in f32
            if (_status(r, mode, "f32", "out") or {}).get("status")
            in ("native", "fallback", "fails")
        ]
        out_ok = sum(1 for r in outs if _status(r, mode, "f32", "out")["status"] == "native")
        pct = lambda a, b: f"{100.0 * a / b:.1f}%" if b else "n/a"  # noqa: E731
        lines += [
            f"  - float32 forward, all samples native: {fwd_ok} / {len(f32)} = **{pct(fwd_ok, len(f32))}**"
            " (target >= 90%; entries CPU supports in float32, PyTorch-skipped ones excluded)",
            f"  - float32 backward native: {bwd_ok} / {len(grad)} = **{pct(bwd_ok, len(grad))}**"
            " (target >= 85%; entries with autograd; a failing forward counts as a failing backward)",
            f"  - float32 out= native: {out_ok} / {len(outs)} = {pct(out_ok, len(outs))}",
        ]
        for dt in meta["dtypes"]:
            if dt == "f32":
                continue
            tested = [
                r
                for r in recs
                if (_status(r, mode, dt, "forward") or {}).get("status") not in (None, "skipped")
            ]
            ok = sum(1 for r in tested if _status(r, mode, dt, "forward")["status"] == "native")
            lines.append(f"  - {dt} forward native: {ok} / {len(tested)} = {pct(ok, len(tested))}")
    # Most common missing lowerings.
    missing = collections.Counter()
    for r in recs:
        ops = set()
        for per_mode in r.get("results", {}).values():
            for per in per_mode.values():
                for p in per.values():
                    ops.update(p.get("fallback_ops", []))
                    err = p.get("error", "")
                    if "no tpu lowering for " in err:
                        ops.add(err.split("no tpu lowering for ")[1].split()[0])
        missing.update(ops)
    if missing:
        lines += ["", "## Most wanted lowerings (entries that need them)", ""]
        lines.append(", ".join(f"`{op}` ({n})" for op, n in missing.most_common(60)))
    lines += [
        "",
        "## Not native",
        "",
        f"Every part that is not native in {main} mode, with its first error.",
        "",
    ]
    for dt in meta["dtypes"]:
        for part in ("forward", "backward", "out"):
            bad = [(r["entry"], _status(r, main, dt, part)) for r in recs]
            bad = [(e, st) for e, st in bad if st and st["status"] in ("fallback", "fails")]
            if bad:
                lines.append(
                    f"- {dt} {part} ({len(bad)}): "
                    + "; ".join(
                        f"`{e}` {st['status']}: {_md(st.get('error', ''))[:120]}" for e, st in bad
                    )
                )
    lines += ["", "## Entries", ""]
    head = "| entry | dtypes passing (" + main + ") | fwd | bwd | out |"
    if len(modes) > 1:
        head += " " + " | ".join(f"{m} fwd/bwd" for m in modes[1:]) + " |"
    head += " first error |"
    lines += [head, "|" + "---|" * (head.count("|") - 1)]
    for r in recs:
        passing = [
            dt
            for dt in meta["dtypes"]
            if (_status(r, main, dt, "forward") or {}).get("status") == "native"
        ]
        row = f"| `{r['entry']}` | {' '.join(passing)} | {_cell(_status(r, main, 'f32', 'forward'))} | "
        row += f"{_cell(_status(r, main, 'f32', 'backward'))} | {_cell(_status(r, main, 'f32', 'out'))} |"
        for m in modes[1:]:
            row += f" {_cell(_status(r, m, 'f32', 'forward'))}/{_cell(_status(r, m, 'f32', 'backward'))} |"
        row += f" {_md(_first_error(r, modes))} |"
        lines.append(row)
    lines.append("")
    with open(DOC, "w") as f:
        f.write("\n".join(lines))
    del conf


def _entry_class_mode(rec, mode):
    if "skip" in rec:
        return "skipped"
    if "crash" in rec:
        return "fails"
    return _conf.entry_class({"results": {mode: rec.get("results", {}).get(mode, {})}})


def merge(stored, new, args):
    """New results replace the stored ones of the same entry, mode and dtype; the meta lists every
    mode and dtype any sweep covered."""
    for eid, rec in new.items():
        old = stored["entries"].get(eid)
        if old is None or "skip" in rec or "crash" in rec or "skip" in old or "crash" in old:
            stored["entries"][eid] = rec
            continue
        for mode, per_mode in rec["results"].items():
            old["results"].setdefault(mode, {}).update(per_mode)
        old["seconds"] = rec.get("seconds")
    meta = stored["meta"]
    for key, vals, order in (
        ("modes", args.modes, ("strict", "fused", "debug")),
        ("dtypes", args.dtypes, DTYPES),
    ):
        have = set(meta.get(key, [])) | set(vals.split(","))
        meta[key] = [v for v in order if v in have]
    meta["max_samples"] = args.max_samples


def main():
    p = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    p.add_argument("--ops", help="comma-separated entry ids or op names (default: all of op_db)")
    p.add_argument("--modes", default="strict", help="comma-separated eager modes (strict,fused)")
    p.add_argument(
        "--dtypes", default="f32,bf16,i64,bool", help="comma-separated: f32,bf16,i64,bool"
    )
    p.add_argument("--max-samples", type=int, default=8, help="samples per entry and dtype")
    p.add_argument("--chunk", type=int, default=60, help="entries per worker process")
    p.add_argument(
        "--entry-timeout", type=float, default=600, help="seconds before an entry counts as hung"
    )
    p.add_argument(
        "--render", action="store_true", help="only render docs/op_coverage.md from the results"
    )
    p.add_argument("--results", default=RESULTS)
    p.add_argument("--worker", help=argparse.SUPPRESS)
    p.add_argument("--out", help=argparse.SUPPRESS)
    args = p.parse_args()
    if args.worker:
        worker(args)
        return
    import tempfile

    import torch

    stored = {"meta": {}, "entries": {}}
    if os.path.exists(args.results):
        stored = json.load(open(args.results))
    if not args.render:
        names = set(args.ops.split(",")) if args.ops else None
        ids = [_conf.entry_id(op) for op in _conf.entries(names)]
        if not ids:
            raise SystemExit(f"no op_db entry matches {args.ops}")
        with tempfile.TemporaryDirectory(prefix="op_coverage-") as tmp:
            t0 = time.time()
            merge(stored, sweep(ids, args, tmp), args)
            print(f"swept {len(ids)} entries in {time.time() - t0:.0f} s", flush=True)
        with open(args.results, "w") as f:
            json.dump(stored, f, indent=1, sort_keys=True)
    meta = dict(stored["meta"])
    if not meta:
        raise SystemExit(f"no results in {args.results}: run a sweep first")
    meta["torch"] = torch.__version__
    meta["command"] = (
        "python tools/op_coverage.py"
        + (f" --modes {','.join(meta['modes'])}" if meta["modes"] != ["strict"] else "")
        + (f" --dtypes {','.join(meta['dtypes'])}" if meta["dtypes"] != list(DTYPES) else "")
    )
    meta["overloads"] = registered_overloads()
    render(stored["entries"], meta)
    print(f"wrote {DOC}")


_conf = _import_harness()

if __name__ == "__main__":
    main()
