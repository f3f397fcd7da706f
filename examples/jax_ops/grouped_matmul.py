"""The grouped (ragged) matmul of a mixture-of-experts layer as a JAX op: tokens sorted by
expert, group_sizes[e] rows multiplied by expert e's weight, in one kernel
(`jax.lax.ragged_dot`) instead of a loop over experts. Its backward is JAX's vjp of it."""

import jax
import jax.numpy as jnp
import torch

import torch_tpu


def _ragged_dot(x, weights, group_sizes):
    return jax.lax.ragged_dot(x, weights, group_sizes.astype(jnp.int32))


@torch_tpu.pallas.jax_op("examples::grouped_matmul")
def grouped_matmul(x: jax.Array, weights: jax.Array, group_sizes: jax.Array) -> jax.Array:
    """x [tokens, k] sorted by group, weights [groups, k, n], group_sizes [groups] -> [tokens, n]."""
    return _ragged_dot(x, weights, group_sizes)


@torch_tpu.pallas.jax_op("examples::grouped_matmul_backward")
def grouped_matmul_backward(
    grad: jax.Array, x: jax.Array, weights: jax.Array, group_sizes: jax.Array
) -> tuple[jax.Array, jax.Array]:
    _, vjp = jax.vjp(lambda x, w: _ragged_dot(x, w, group_sizes), x, weights)
    return vjp(grad)


def _setup_context(ctx, inputs, output):
    ctx.save_for_backward(*inputs)


def _backward(ctx, grad):
    x, weights, group_sizes = ctx.saved_tensors
    dx, dweights = grouped_matmul_backward(grad, x, weights, group_sizes)
    return dx, dweights, None


grouped_matmul.register_autograd(_backward, setup_context=_setup_context)


def grouped_matmul_reference(x, weights, group_sizes):
    """The same product in torch ops, one matmul per group (the tests' reference)."""
    ends = torch.cumsum(group_sizes, 0).tolist()
    starts = [0] + ends[:-1]
    return torch.cat([x[s:e] @ weights[g] for g, (s, e) in enumerate(zip(starts, ends))])


class MoE(torch.nn.Module):
    """A top-1 mixture-of-experts feed-forward layer whose experts run as one grouped matmul."""

    def __init__(self, dim, hidden, experts, reference=False):
        super().__init__()
        self.router = torch.nn.Linear(dim, experts, bias=False)
        self.up = torch.nn.Parameter(torch.randn(experts, dim, hidden) / dim**0.5)
        self.down = torch.nn.Parameter(torch.randn(experts, hidden, dim) / hidden**0.5)
        self.experts = experts
        self.reference = reference  # torch ops (one matmul per expert) instead of the JAX op

    def forward(self, x):
        shape = x.shape
        x = x.reshape(-1, shape[-1])
        probs = self.router(x).softmax(-1)
        weight, expert = probs.max(-1)
        order = torch.argsort(expert, stable=True)
        # Static shapes (no bincount): the layer compiles to one program.
        sizes = torch.nn.functional.one_hot(expert, self.experts).sum(0)
        matmul = grouped_matmul_reference if self.reference else grouped_matmul
        h = matmul(x[order], self.up, sizes)
        h = matmul(torch.nn.functional.gelu(h), self.down, sizes)
        out = torch.empty_like(h).index_copy(0, order, h)
        return (out * weight[:, None]).reshape(shape)
