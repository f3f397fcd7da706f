"""`python -m torch_tpu.bench MODEL`: the example model families measured the same way every
time (import, first step cold and warm, steady state, memory, MFU) in every mode, beside native
PyTorch on the CPU. See `python -m torch_tpu.bench --help` and docs/benchmarks.md."""
