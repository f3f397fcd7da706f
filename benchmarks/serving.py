"""Serving on vLLM (docs/serving.md): vLLM's own offline throughput and online serving benchmarks,
run on `tpu` (torch_tpu's platform plugin) and on vLLM's CPU platform (`VLLM_TARGET_DEVICE=cpu`).

    python benchmarks/serving.py [--batches 8,32] [--input-len 128] [--output-len 128]
                                 [--only offline|online] [--quick] [--json PATH] [--work-dir DIR]

Model: a llama made from a config in the vLLM environment (.venv-vllm, scripts/vllm_env.sh):
4 layers, hidden 256, 4 query and 4 KV heads of 64, vocab 256 (a word-level tokenizer), float32.
Engine settings, the same on both platforms: --enforce-eager, --max-model-len 512,
--max-num-seqs = batch, --max-num-batched-tokens 2048 (pinned: vLLM's default depends on the
platform), a KV cache of 256 MiB (--kv-cache-memory-bytes, not sized from host memory), seed 0.

- Offline: `vllm.benchmarks.throughput` (its parser, its `main`), random dataset, --num-prompts =
  batch, per batch size; requests/s, tokens/s and output tokens/s from its --output-json and its
  report. In the same process the benchmark's `LLM` is timed from its construction to ready
  (start-up), and afterwards asked `compiles_since_start_up` (tpu only: programs compiled while
  serving, which should be 0).
- Online: vLLM's OpenAI server (started here on a free loopback port, ready at /health), driven
  by `vllm.benchmarks.serve` with the random dataset at a fixed request rate; request and output
  token throughput, TTFT and ITL (mean, median), the server's time to /health, and on tpu the
  server's compiles after start-up (through vLLM's dev-mode /collective_rpc).

Both benchmarks sample at temperature 1.0 (the throughput benchmark's fixed setting, asked of
the server too), output lengths fixed by ignoring EOS. tpu compiles into one disk cache
(--tpu-cache; by default a new one in the work dir, so the first offline start-up is cold, later
ones find what earlier runs compiled); the report says how many programs each tpu start-up
compiled. Run twice with the same --tpu-cache for warm start-ups throughout. Ratios are
tpu / CPU (above 1: tpu is faster for throughput, slower for start-up and latencies). Each platform threads as it does by default (vLLM's CPU worker binds
its OpenMP threads itself), on cores that other work on the machine may share.
"""

import argparse
import json
import os
import re
import shlex
import signal
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request
from pathlib import Path

from common import free_port, machine

ROOT = Path(__file__).resolve().parent.parent
VENV_PYTHON = ROOT / ".venv-vllm" / "bin" / "python"
PLATFORMS = ("tpu", "cpu")
FULL = dict(
    batches="8,32", input_len=128, output_len=128, num_prompts=32, max_model_len=512,
    max_num_batched_tokens=2048,
)  # fmt: skip
QUICK = dict(
    batches="2,4", input_len=16, output_len=16, num_prompts=8, max_model_len=128,
    max_num_batched_tokens=256,
)  # fmt: skip

MAKE_MODEL = r"""
import sys, torch
from tokenizers import Tokenizer, models, pre_tokenizers
from transformers import LlamaConfig, LlamaForCausalLM, PreTrainedTokenizerFast
out = sys.argv[1]
words = ["<unk>", "<s>", "</s>"] + [f"w{i}" for i in range(253)]
tok = Tokenizer(models.WordLevel({w: i for i, w in enumerate(words)}, unk_token="<unk>"))
tok.pre_tokenizer = pre_tokenizers.WhitespaceSplit()
PreTrainedTokenizerFast(tokenizer_object=tok, unk_token="<unk>", bos_token="<s>", eos_token="</s>").save_pretrained(out)
torch.manual_seed(0)
cfg = LlamaConfig(vocab_size=256, hidden_size=256, intermediate_size=512, num_hidden_layers=4,
                  num_attention_heads=4, num_key_value_heads=4, head_dim=64,
                  max_position_embeddings=1024, bos_token_id=1, eos_token_id=2)
LlamaForCausalLM(cfg).save_pretrained(out)
"""

# vLLM's throughput benchmark, unchanged; `LLM.from_engine_args` (how its run_vllm builds the
# engine) is wrapped only to time the start-up and to keep the LLM for one question afterwards.
OFFLINE = r"""
import json, sys, time
def main():
    from vllm import LLM
    from vllm.benchmarks import throughput
    from vllm.platforms import current_platform
    from vllm.utils.argparse_utils import FlexibleArgumentParser
    parser = FlexibleArgumentParser()
    throughput.add_cli_args(parser)
    args = parser.parse_args(sys.argv[1:])
    built = {}
    from_engine_args = LLM.from_engine_args
    def timed(*a, **k):
        t0 = time.perf_counter()
        built["llm"] = from_engine_args(*a, **k)
        built["start_up_s"] = time.perf_counter() - t0
        return built["llm"]
    LLM.from_engine_args = timed
    throughput.main(args)
    result = {"platform": current_platform.device_type, "start_up_s": built.get("start_up_s")}
    llm = built.get("llm")
    if llm is not None:
        scheduler = llm.llm_engine.vllm_config.scheduler_config
        result["max_num_batched_tokens"] = scheduler.max_num_batched_tokens
        if current_platform.device_type == "tpu":  # vLLM's CPU worker has no such method
            result["compiles_since_start_up"] = llm.collective_rpc("compiles_since_start_up")
    print("RESULT " + json.dumps(result), flush=True)
if __name__ == "__main__":  # vLLM starts its engine process by spawn
    main()
"""

ONLINE = r"""
import sys
from vllm.benchmarks import serve
from vllm.utils.argparse_utils import FlexibleArgumentParser
parser = FlexibleArgumentParser()
serve.add_cli_args(parser)
serve.main(parser.parse_args(sys.argv[1:]))
"""


def platform_env(platform, a):
    """The environment of a run: vLLM's CPU platform by its switch; on tpu, the compile cache of
    --tpu-cache (a second run of this script finds every program there: a warm start-up)."""
    env = dict(os.environ)
    env.pop("VLLM_TARGET_DEVICE", None)
    if platform == "cpu":
        env["VLLM_TARGET_DEVICE"] = "cpu"
    else:
        env["TORCH_TPU_CACHE_DIR"] = a.tpu_cache
    return env


def start_up_compiles(log_path):
    """Programs the tpu start-up compiled (the rest came from the disk cache), from its log."""
    found = re.findall(
        r"made-up requests in [\d.]+ s \((\d+) programs compiled", log_path.read_text()
    )
    return int(found[-1]) if found else None


def run_venv(args, env, log, timeout):
    """Runs the vLLM environment's python with `args`, its output into `log`; returns stdout and
    whether it succeeded (the log's tail is printed when not)."""
    try:
        proc = subprocess.run(
            [str(VENV_PYTHON), *args],
            env=env,
            capture_output=True,
            text=True,
            timeout=timeout,
        )
        out, err, ok = proc.stdout, proc.stderr, proc.returncode == 0
    except subprocess.TimeoutExpired as e:
        out, err, ok = (
            str(e.stdout or ""),
            str(e.stderr or "") + f"\ntimed out after {timeout} s",
            False,
        )
    log.write_text(out + "\n--- stderr ---\n" + err)
    if not ok:
        print(f"    failed, log {log}:\n{(out + err)[-3000:]}")
    return out, ok


def result_line(out):
    for line in out.splitlines():
        if line.startswith("RESULT "):
            return json.loads(line[len("RESULT ") :])
    return {}


def engine_args(model, batch, a):
    """vLLM engine flags common to the offline benchmark and the server."""
    return [
        "--model", model, "--tokenizer", model, "--dtype", "float32", "--enforce-eager",
        "--max-model-len", str(a.max_model_len), "--max-num-seqs", str(batch),
        "--max-num-batched-tokens", str(a.max_num_batched_tokens),
        "--kv-cache-memory-bytes", str(a.kv_cache_bytes), "--seed", "0",
    ]  # fmt: skip


def random_dataset_args(num_prompts, a):
    return [
        "--dataset-name", "random", "--random-input-len", str(a.input_len),
        "--random-output-len", str(a.output_len), "--num-prompts", str(num_prompts),
    ]  # fmt: skip


def offline(platform, batch, model, a, work):
    """vLLM's throughput benchmark at one batch size: all `batch` prompts at once."""
    out_json = work / f"offline_{platform}_{batch}.json"
    bench = random_dataset_args(batch, a) + engine_args(model, batch, a)
    bench += ["--output-json", str(out_json)]
    print(f"  offline {platform}, batch {batch}")
    log_path = work / f"{out_json.stem}.log"
    out, ok = run_venv(["-c", OFFLINE, *bench], platform_env(platform, a), log_path, 3600)
    if not ok or not out_json.exists():
        return {"error": True, "args": bench}
    r = json.loads(out_json.read_text())
    # The JSON has requests/s and tokens/s; the output tokens are in the benchmark's report only.
    m = re.search(r"Total num output tokens:\s+(\d+)", out)
    result = {
        "args": bench,
        "requests_per_s": r["requests_per_second"],
        "tokens_per_s": r["tokens_per_second"],
        "output_tokens_per_s": int(m.group(1)) / r["elapsed_time"] if m else None,
        "elapsed_s": r["elapsed_time"],
        "start_up_compiles": start_up_compiles(log_path) if platform == "tpu" else None,
        **result_line(out),
    }
    tokens, start_up = result["output_tokens_per_s"], result.get("start_up_s")
    compiles = result.get("compiles_since_start_up", "(not asked)")
    print(
        f"    {tokens and round(tokens, 1)} output tokens/s, start-up"
        f" {start_up and round(start_up, 1)} s, compiles after start-up {compiles}"
    )
    return result


def http(url, body=None, timeout=10):
    data = None if body is None else json.dumps(body).encode()
    req = urllib.request.Request(url, data, {"Content-Type": "application/json"})
    with urllib.request.urlopen(req, timeout=timeout) as resp:
        return resp.status, resp.read()


def start_server(server_args, env, log):
    """vLLM's OpenAI server, in a process group of its own so that its engine process, which it
    spawns, is stopped with it."""
    env = dict(env, VLLM_SERVER_DEV_MODE="1")  # /collective_rpc, to ask tpu for its compiles
    cmd = [str(VENV_PYTHON), "-m", "vllm.entrypoints.openai.api_server", *server_args]
    return subprocess.Popen(
        cmd, env=env, stdout=log, stderr=subprocess.STDOUT, start_new_session=True
    )


def wait_healthy(proc, port, since, timeout=1800):
    """Seconds from `since` (the launch) to the first healthy /health; None if the server died
    or took longer than `timeout`."""
    while time.perf_counter() - since < timeout and proc.poll() is None:
        try:
            if http(f"http://127.0.0.1:{port}/health", timeout=5)[0] == 200:
                return time.perf_counter() - since
        except (urllib.error.URLError, OSError):
            pass
        time.sleep(0.5)
    return None


def stop_server(proc):
    """SIGTERM (vLLM shuts its engine down), then SIGKILL to whatever of its group is left."""
    if proc.poll() is None:
        proc.terminate()
        try:
            proc.wait(timeout=60)
        except subprocess.TimeoutExpired:
            pass
    try:
        os.killpg(proc.pid, signal.SIGKILL)  # the group this script started, nothing else
    except ProcessLookupError:
        pass
    proc.wait()


def server_compiles(port):
    body = {"method": "compiles_since_start_up", "timeout": 60}
    _, text = http(f"http://127.0.0.1:{port}/collective_rpc", body, timeout=90)
    return json.loads(text)["results"]  # one per worker, as `collective_rpc` gives them


def online(platform, model, a, work):
    """vLLM's serving benchmark against a server this function starts and always stops."""
    batch = max(a.batches)
    port = free_port()
    env = platform_env(platform, a)
    server_args = engine_args(model, batch, a) + ["--host", "127.0.0.1", "--port", str(port)]
    result_file = f"online_{platform}.json"
    bench = random_dataset_args(a.num_prompts, a) + [
        "--backend", "openai", "--host", "127.0.0.1", "--port", str(port),
        "--model", model, "--tokenizer", model, "--request-rate", str(a.request_rate),
        "--temperature", "1.0",  # the throughput benchmark's sampling (it sets 1.0 itself)
        "--seed", "0", "--disable-tqdm", "--save-result", "--result-dir", str(work),
        "--result-filename", result_file,
    ]  # fmt: skip
    result = {"error": True, "server_args": server_args, "args": bench}
    print(f"  online {platform}: server on port {port}, max-num-seqs {batch}")
    log_path = work / f"online_{platform}.log"
    with open(log_path, "w") as log:
        launched = time.perf_counter()
        proc = start_server(server_args, env, log)
        try:
            ready_s = wait_healthy(proc, port, launched)
            if ready_s is None:
                print(f"    server never became healthy, log {log_path}")
                return result
            print(f"    healthy after {ready_s:.1f} s")
            result["server_start_up_s"] = ready_s
            if platform == "tpu":
                result["start_up_compiles"] = start_up_compiles(log_path)
            bench_log = work / f"online_{platform}_bench.log"
            if not run_venv(["-c", ONLINE, *bench], env, bench_log, 3600)[1]:
                return result
            del result["error"]
            result.update(json.loads((work / result_file).read_text()))
            if platform == "tpu":
                try:
                    result["compiles_since_start_up"] = server_compiles(port)
                except (urllib.error.URLError, OSError, KeyError, ValueError) as e:
                    result["compiles_since_start_up"] = f"rpc failed: {e}"
        finally:
            stop_server(proc)
    keys = ("request_throughput", "output_throughput", "median_ttft_ms", "median_itl_ms")
    print("    " + ", ".join(f"{k} {result.get(k, float('nan')):.2f}" for k in keys))
    return result


def row(name, tpu, cpu, fmt="{:.2f}"):
    """A table line; numbers in `fmt`, anything else (lists of per-worker counts) as it prints."""
    number = lambda v: isinstance(v, int | float)
    show = lambda v: "failed" if v is None else (fmt.format(v) if number(v) else str(v))
    ok = number(tpu) and number(cpu) and cpu
    ratio = f"{tpu / cpu:.2f}" if ok else "–"
    return f"| {name} | {show(tpu)} | {show(cpu)} | {ratio} |"


def get(result, key):
    return None if result.get("error") else result.get(key)


def offline_rows(off, batches):
    for b in batches:
        t, c = off["tpu"][str(b)], off["cpu"][str(b)]
        for key, name in (
            ("output_tokens_per_s", "output tokens/s"),
            ("tokens_per_s", "tokens/s (in + out)"),
            ("requests_per_s", "requests/s"),
        ):
            yield row(f"offline batch {b}: {name}", get(t, key), get(c, key))
        name = f"offline batch {b}: start-up, LLM() to ready (s)"
        yield row(name, get(t, "start_up_s"), get(c, "start_up_s"), "{:.1f}")
        yield row(
            f"offline batch {b}: programs compiled at start-up", get(t, "start_up_compiles"), "–"
        )
        compiles = get(t, "compiles_since_start_up")
        yield row(f"offline batch {b}: compiles after start-up", compiles, "–")


def online_rows(on):
    t, c = on["tpu"], on["cpu"]
    yield row("online: programs compiled at start-up", get(t, "start_up_compiles"), "–")
    for key, name, fmt in (
        ("server_start_up_s", "start-up, launch to /health (s)", "{:.1f}"),
        ("request_throughput", "requests/s", "{:.2f}"),
        ("output_throughput", "output tokens/s", "{:.2f}"),
        ("mean_ttft_ms", "mean TTFT (ms)", "{:.1f}"),
        ("median_ttft_ms", "median TTFT (ms)", "{:.1f}"),
        ("mean_itl_ms", "mean ITL (ms)", "{:.1f}"),
        ("median_itl_ms", "median ITL (ms)", "{:.1f}"),
    ):
        yield row(f"online: {name}", get(t, key), get(c, key), fmt)
    yield row("online: compiles after start-up", get(t, "compiles_since_start_up"), "–")
    yield row("online: failed requests", get(t, "failed"), get(c, "failed"), "{}")


def table(results, a):
    """The markdown report: one line per number, tpu / CPU where both platforms have it."""
    lines = ["| metric | tpu | CPU | tpu / CPU |", "|---|---|---|---|"]
    if "offline" in results:
        lines += offline_rows(results["offline"], a.batches)
    if "online" in results:
        lines += online_rows(results["online"])
    return "\n".join(lines)


def commands(results, command):
    """The command line, and the vLLM benchmarks' own arguments as run on tpu (on CPU the same,
    with VLLM_TARGET_DEVICE=cpu; the port is a free one, the model in the work dir)."""
    lines = [f"`{command}` ({machine()})", ""]
    for b, r in results.get("offline", {}).get("tpu", {}).items():
        lines.append(f"- offline, batch {b}: `vllm.benchmarks.throughput.main` with")
        lines.append(f"  `{shlex.join(r['args'])}`")
    if "online" in results:
        r = results["online"]["tpu"]
        lines.append("- online: `python -m vllm.entrypoints.openai.api_server`")
        lines.append(f"  `{shlex.join(r['server_args'])}`,")
        lines.append(f"  then `vllm.benchmarks.serve.main` with `{shlex.join(r['args'])}`")
    return "\n".join(lines)


def parse_args():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    sized = lambda key, what: f"{what} (default {FULL[key]}, --quick: {QUICK[key]})"
    p.add_argument("--batches", help=sized("batches", "offline batch sizes, comma-separated"))
    p.add_argument("--input-len", type=int, help=sized("input_len", "prompt tokens"))
    p.add_argument("--output-len", type=int, help=sized("output_len", "generated tokens"))
    p.add_argument("--num-prompts", type=int, help=sized("num_prompts", "online prompts"))
    p.add_argument("--request-rate", type=float, default=8.0, help="online requests/s")
    p.add_argument("--max-model-len", type=int, help=sized("max_model_len", "vLLM's"))
    p.add_argument(
        "--max-num-batched-tokens", type=int, help=sized("max_num_batched_tokens", "vLLM's")
    )
    p.add_argument("--kv-cache-bytes", type=int, default=256 << 20)
    p.add_argument("--quick", action="store_true", help="smoke run: tiny lengths and batches")
    p.add_argument("--only", choices=["offline", "online"], help="run one benchmark only")
    p.add_argument("--json", help="also write the results and the table here")
    p.add_argument("--work-dir", help="keep the model, logs and results here (default: temp)")
    p.add_argument(
        "--tpu-cache",
        help="tpu's compile cache (default: one in the work dir, empty at first: a cold start)",
    )
    a = p.parse_args()
    for key, value in (QUICK if a.quick else FULL).items():  # what is given on the line wins
        if getattr(a, key) is None:
            setattr(a, key, value)
    a.batches = [int(b) for b in str(a.batches).split(",")]
    return a


def run_all(a, work):
    print(f"serving benchmark, {machine()}; work dir {work}")
    model = str(work / "model")
    if not run_venv(["-c", MAKE_MODEL, model], dict(os.environ), work / "make_model.log", 600)[1]:
        sys.exit("could not build the model")
    a.tpu_cache = a.tpu_cache or str(work / "tpu_cache")
    results = {}
    if a.only != "online":
        results["offline"] = {
            platform: {str(b): offline(platform, b, model, a, work) for b in a.batches}
            for platform in PLATFORMS
        }
    if a.only != "offline":
        results["online"] = {platform: online(platform, model, a, work) for platform in PLATFORMS}
    return results


def main():
    a = parse_args()
    command = "python " + shlex.join(["benchmarks/serving.py", *sys.argv[1:]])
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(a.work_dir or tmp).resolve()
        work.mkdir(parents=True, exist_ok=True)
        results = run_all(a, work)
    report = table(results, a) + "\n\n" + commands(results, command)
    print(f"\n{report}")
    if a.json:
        results.update(command=command, machine=machine(), table=report, settings=vars(a))
        Path(a.json).write_text(json.dumps(results, indent=2))


if __name__ == "__main__":
    main()
