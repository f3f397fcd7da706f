"""RMSNorm as a JAX op on tpu tensors: the forward is one fused JAX function, the backward is
JAX's own vector-Jacobian product of it, registered with torch autograd."""

import jax
import jax.numpy as jnp
import torch

import torch_tpu


def _rms_norm(x, weight, eps):
    # Normalised in float32 whatever the input dtype, rounded once to it (as torch's RMSNorm
    # under autocast): bfloat16 activations keep float32 statistics.
    x32 = x.astype(jnp.float32)
    y = x32 * jax.lax.rsqrt(jnp.mean(x32 * x32, axis=-1, keepdims=True) + eps)
    return (y * weight.astype(jnp.float32)).astype(x.dtype)


@torch_tpu.pallas.jax_op("examples::rms_norm")
def rms_norm(x: jax.Array, weight: jax.Array, eps: float = 1e-6) -> jax.Array:
    return _rms_norm(x, weight, eps)


@torch_tpu.pallas.jax_op("examples::rms_norm_backward")
def rms_norm_backward(
    grad: jax.Array, x: jax.Array, weight: jax.Array, eps: float
) -> tuple[jax.Array, jax.Array]:
    _, vjp = jax.vjp(lambda x, w: _rms_norm(x, w, eps), x, weight)
    return vjp(grad)


def _setup_context(ctx, inputs, output):
    x, weight, eps = inputs
    ctx.save_for_backward(x, weight)
    ctx.eps = eps


def _backward(ctx, grad):
    x, weight = ctx.saved_tensors
    dx, dweight = rms_norm_backward(grad, x, weight, ctx.eps)
    return dx, dweight, None


rms_norm.register_autograd(_backward, setup_context=_setup_context)


class RMSNorm(torch.nn.Module):
    """torch.nn.RMSNorm's interface (last dimension, elementwise weight) on the JAX op."""

    def __init__(self, dim, eps=1e-6):
        super().__init__()
        self.weight = torch.nn.Parameter(torch.ones(dim))
        self.eps = eps

    def forward(self, x):
        return rms_norm(x, self.weight, self.eps)
