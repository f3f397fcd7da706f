"""Per-op overhead: median microseconds of a small op (add on 16 floats) in strict mode with a
warm compile cache, beside native PyTorch CPU eager.

    python benchmarks/op_overhead.py
"""

import torch
from common import machine, median_us

import torch_tpu


def main():
    print(f"# op_overhead ({machine()})")
    n = 20000
    for label, make in (
        ("add 16 floats", lambda d: (torch.ones(16, device=d), torch.ones(16, device=d))),
    ):
        results = {}
        for device in ("cpu", "tpu"):
            a, b = make(device)
            fn = lambda: torch.add(a, b)  # noqa: E731
            with torch_tpu.eager_mode("strict"):
                for _ in range(1000):
                    fn()
                if device == "tpu":
                    torch.tpu.synchronize()
                results[device] = median_us(fn, n)
                if device == "tpu":
                    torch.tpu.synchronize()
        print(
            f"{label}: strict tpu {results['tpu']:.2f} us/op, cpu eager {results['cpu']:.2f} us/op, "
            f"ratio {results['tpu'] / results['cpu']:.2f}x"
        )


if __name__ == "__main__":
    main()
