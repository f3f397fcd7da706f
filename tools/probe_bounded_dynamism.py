"""What XLA does with StableHLO bounded dynamism on the plugin in use: the evidence behind
docs/architecture.md's choice of pad-and-mask (section "Shapes that change").

    python tools/probe_bounded_dynamism.py

Each probe runs a hand-written module through torch_tpu::imported_call: a dimension given a
runtime size by set_dimension_size (bounded by its static size), then a reduce, a concatenate or a
reshape merging it, compared with the answer on the real elements; the last probe returns a
bounded-dynamic result from the program."""

import torch

import torch_tpu  # noqa: F401
from torch_tpu import _C


def i32(n):
    return torch.tensor(n, dtype=torch.int32, device="tpu")


def run(module, inputs, result_shape):
    try:
        return _C._run_imported(module, inputs, [torch.empty(result_shape, device="meta")], [])[0]
    except RuntimeError as e:
        return "error: " + str(e).splitlines()[0][:160]


SUM = """
module @m {
  func.func public @main(%x: tensor<1024xf32>, %n: tensor<i32>) -> tensor<f32> {
    %d = stablehlo.set_dimension_size %x, %n, dim = 0 : (tensor<1024xf32>, tensor<i32>) -> tensor<?xf32, #stablehlo.bounds<1024>>
    %z = stablehlo.constant dense<0.0> : tensor<f32>
    %s = stablehlo.reduce(%d init: %z) applies stablehlo.add across dimensions = [0] : (tensor<?xf32, #stablehlo.bounds<1024>>, tensor<f32>) -> tensor<f32>
    return %s : tensor<f32>
  }
}"""

CONCAT = """
module @m {
  func.func public @main(%x: tensor<8xf32>, %y: tensor<8xf32>, %n: tensor<i32>, %m: tensor<i32>) -> tensor<16xf32> {
    %a = stablehlo.set_dimension_size %x, %n, dim = 0 : (tensor<8xf32>, tensor<i32>) -> tensor<?xf32, #stablehlo.bounds<8>>
    %b = stablehlo.set_dimension_size %y, %m, dim = 0 : (tensor<8xf32>, tensor<i32>) -> tensor<?xf32, #stablehlo.bounds<8>>
    %c = stablehlo.concatenate %a, %b, dim = 0 : (tensor<?xf32, #stablehlo.bounds<8>>, tensor<?xf32, #stablehlo.bounds<8>>) -> tensor<?xf32, #stablehlo.bounds<16>>
    %k = stablehlo.constant dense<16> : tensor<i32>
    %s = stablehlo.set_dimension_size %c, %k, dim = 0 : (tensor<?xf32, #stablehlo.bounds<16>>, tensor<i32>) -> tensor<16xf32>
    return %s : tensor<16xf32>
  }
}"""

RESHAPE_SUM = """
module @m {
  func.func public @main(%x: tensor<3x8xf32>, %n: tensor<i32>) -> tensor<f32> {
    %a = stablehlo.set_dimension_size %x, %n, dim = 1 : (tensor<3x8xf32>, tensor<i32>) -> tensor<3x?xf32, #stablehlo.bounds<?, 8>>
    %r = stablehlo.reshape %a : (tensor<3x?xf32, #stablehlo.bounds<?, 8>>) -> tensor<?xf32, #stablehlo.bounds<24>>
    %z = stablehlo.constant dense<0.0> : tensor<f32>
    %s = stablehlo.reduce(%r init: %z) applies stablehlo.add across dimensions = [0] : (tensor<?xf32, #stablehlo.bounds<24>>, tensor<f32>) -> tensor<f32>
    return %s : tensor<f32>
  }
}"""

DYNAMIC_RESULT = """
module @m {
  func.func public @main(%x: tensor<8xf32>, %n: tensor<i32>) -> tensor<?xf32, #stablehlo.bounds<8>> {
    %a = stablehlo.set_dimension_size %x, %n, dim = 0 : (tensor<8xf32>, tensor<i32>) -> tensor<?xf32, #stablehlo.bounds<8>>
    return %a : tensor<?xf32, #stablehlo.bounds<8>>
  }
}"""


def main():
    print(torch.tpu.get_device_name())
    x = torch.arange(1024.0, device="tpu")
    for n in (10, 1000):
        got = run(SUM, [x, i32(n)], ())
        print(
            f"reduce over {n} of 1024: {got if isinstance(got, str) else got.item()} (want {sum(range(n))})"
        )
    a, b = torch.arange(8.0, device="tpu"), torch.arange(100.0, 108.0, device="tpu")
    got = run(CONCAT, [a, b, i32(3), i32(5)], (16,))
    want = [0.0, 1.0, 2.0, 100.0, 101.0, 102.0, 103.0, 104.0]
    print(
        f"concatenate 3 + 5 of 8 + 8: {got if isinstance(got, str) else got.cpu()[:8].tolist()} (want {want})"
    )
    m = torch.arange(24.0).reshape(3, 8)
    got = run(RESHAPE_SUM, [m.to("tpu"), i32(5)], ())
    print(
        f"reshape [3, 5 of 8] -> [15 of 24], sum: {got if isinstance(got, str) else got.item()} "
        f"(want {m[:, :5].sum().item()})"
    )
    print(f"bounded-dynamic program result: {run(DYNAMIC_RESULT, [a, i32(3)], (8,))}")


if __name__ == "__main__":
    main()
