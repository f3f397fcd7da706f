"""torch.fft (the _fft_r2c/_fft_c2c/_fft_c2r primitives) and complex64 basics (view_as_real,
view_as_complex, complex, polar) on tpu against CPU: values and gradients."""

import pytest
import torch
from op_check import check_op, noncontiguous

import torch_tpu  # noqa: F401

# Every test here runs in strict, debug and fused mode (tests/conftest.py).
pytestmark = pytest.mark.usefixtures("each_mode")

NORMS = (None, "forward", "ortho")
TOL = {"atol": 1e-4, "rtol": 1e-4}


def make(shape, dtype=torch.float32, grad=True, seed=0):
    g = torch.Generator().manual_seed(seed)
    return torch.randn(shape, generator=g, dtype=torch.float64).to(dtype).requires_grad_(grad)


def real_view(fn):
    """fn with complex results seen as (re, im) pairs, so gradients get a complex cotangent."""

    def wrapped(*args, **kwargs):
        out = fn(*args, **kwargs)
        return torch.view_as_real(out.resolve_conj()) if out.is_complex() else out

    return wrapped


@pytest.mark.parametrize("norm", NORMS)
@pytest.mark.parametrize("fn", [torch.fft.fft, torch.fft.ifft, torch.fft.rfft, torch.fft.ihfft])
def test_fft_1d_real_input(fn, norm):
    check_op(real_view(fn), make((3, 10)), norm=norm, grad=True, **TOL)
    check_op(real_view(fn), make((4, 7)), n=5, dim=0, norm=norm, grad=True, **TOL)
    check_op(real_view(fn), noncontiguous(make((5, 6))), n=9, norm=norm, grad=True, **TOL)


@pytest.mark.parametrize("norm", NORMS)
@pytest.mark.parametrize("fn", [torch.fft.fft, torch.fft.ifft, torch.fft.irfft, torch.fft.hfft])
def test_fft_1d_complex_input(fn, norm):
    x = torch.complex(make((3, 9)), make((3, 9), seed=1)).detach().requires_grad_()
    check_op(real_view(fn), x, norm=norm, grad=True, **TOL)
    check_op(real_view(fn), x, n=6, dim=0, norm=norm, grad=True, **TOL)
    check_op(real_view(fn), x, n=11, norm=norm, grad=True, **TOL)


@pytest.mark.parametrize(
    "fn",
    [
        torch.fft.fft2,
        torch.fft.ifft2,
        torch.fft.rfft2,
        torch.fft.fftn,
        torch.fft.rfftn,
        torch.fft.ihfftn,
    ],
)
def test_fft_nd_real_input(fn):
    check_op(real_view(fn), make((2, 5, 6)), grad=True, **TOL)
    check_op(real_view(fn), make((4, 3, 5)), s=(4, 6), dim=(2, 0), norm="ortho", grad=True, **TOL)
    check_op(
        real_view(fn), noncontiguous(make((3, 4, 5))), dim=(0, 1), norm="forward", grad=True, **TOL
    )


@pytest.mark.parametrize(
    "fn", [torch.fft.irfft2, torch.fft.irfftn, torch.fft.hfft2, torch.fft.ifftn]
)
def test_fft_nd_complex_input(fn):
    x = torch.complex(make((3, 4, 5)), make((3, 4, 5), seed=1)).detach().requires_grad_()
    check_op(real_view(fn), x, grad=True, **TOL)
    check_op(real_view(fn), x, s=(6, 4), dim=(0, 2), norm="ortho", grad=True, **TOL)
    check_op(real_view(fn), x, dim=(1, 2), norm="forward", grad=True, **TOL)


def test_fft_more_than_three_dims():
    # stablehlo.fft transforms at most three dims: four are done in two chunks.
    x = make((2, 3, 4, 5, 2))
    check_op(real_view(torch.fft.fftn), x, dim=(0, 1, 2, 3), grad=True, **TOL)
    check_op(real_view(torch.fft.rfftn), x, dim=(4, 0, 2, 1), norm="ortho", grad=True, **TOL)
    y = torch.fft.rfftn(x.detach(), dim=(0, 1, 2, 3)).requires_grad_()
    check_op(real_view(torch.fft.irfftn), y, s=(2, 3, 4, 5), dim=(0, 1, 2, 3), grad=True, **TOL)


def test_fft_primitives_two_sided_and_out():
    x = make((4, 6), grad=False)
    check_op(lambda t: torch.ops.aten._fft_r2c(t, [1], 0, False), x, **TOL)
    out = torch.empty(0, dtype=torch.complex64, device="tpu")
    torch.fft.fft(x.to("tpu"), out=out)
    torch.testing.assert_close(out.cpu(), torch.fft.fft(x), **TOL)


def test_fft_float64():
    check_op(real_view(torch.fft.rfft), make((3, 8), torch.float64), grad=True)
    x = torch.complex(make((3, 5), torch.float64), make((3, 5), torch.float64, seed=1))
    check_op(real_view(torch.fft.ifft2), x.detach().requires_grad_(), grad=True)


def test_stft_istft():
    x = make((2, 64), grad=False)
    window = torch.hann_window(16) + 0.1  # nonzero at the edges: center=False needs it (NOLA)
    check_op(
        lambda t, w: torch.view_as_real(
            torch.stft(t, 16, 4, window=w, center=False, return_complex=True)
        ),
        x,
        window,
        **TOL,
    )
    # istft's overlap-add is unfold_backward.
    spec = torch.stft(x, 16, 4, window=window, center=False, return_complex=True).requires_grad_()
    check_op(
        lambda s, w: torch.istft(s, 16, 4, window=w, center=False), spec, window, grad=True, **TOL
    )


@pytest.mark.parametrize(
    "shape,dim,size,step",
    [((3, 10), 1, 3, 2), ((7,), 0, 2, 3), ((4, 5, 6), 0, 2, 1), ((), 0, 1, 1)],
)
def test_unfold_backward(shape, dim, size, step):
    check_op(lambda t: t.unfold(dim, size, step), make(shape), grad=True)
    check_op(lambda t: t.unfold(dim, size, step), make(shape, torch.bfloat16), grad=True)


# --- complex basics -------------------------------------------------------------------------


def test_view_as_real_and_complex():
    x = make((3, 4, 2))
    check_op(lambda t: torch.view_as_complex(t) * 2, x, grad=True)
    check_op(
        lambda t: torch.view_as_real(torch.view_as_complex(t).conj().resolve_conj()), x, grad=True
    )
    z = torch.complex(make((5,)), make((5,), seed=1)).detach().requires_grad_()
    check_op(lambda t: torch.view_as_real(t * t), z, grad=True)
    check_op(lambda t: torch.view_as_real(t), noncontiguous(z.detach()).requires_grad_(), grad=True)


def test_view_as_real_aliases():
    z = torch.complex(make((4,), grad=False), make((4,), grad=False, seed=1)).to("tpu")
    im = z[1].imag.item()
    r = torch.view_as_real(z)
    r[1, 0] = 7.0  # writes through the f32 view into the complex storage
    assert z[1].item() == complex(7.0, im)
    c = torch.view_as_complex(r)
    c.mul_(2)
    torch.testing.assert_close(r[1].cpu(), torch.tensor([14.0, 2 * im]))


def test_complex_and_polar():
    check_op(
        lambda a, b: torch.view_as_real(torch.complex(a, b)),
        make((3, 4)),
        make((4,), seed=1),
        grad=True,
    )
    check_op(
        lambda a, b: torch.view_as_real(torch.polar(a, b)),
        make((3, 4)).abs(),
        make((3, 4), seed=1),
        grad=True,
    )
    check_op(
        torch.complex,
        make((2, 3), torch.float64, grad=False),
        make((2, 3), torch.float64, grad=False, seed=1),
    )
    out = torch.empty(0, dtype=torch.complex64, device="tpu")
    torch.polar(make((3,), grad=False).abs().to("tpu"), make((3,), grad=False).to("tpu"), out=out)
    a = make((3,), grad=False)
    torch.testing.assert_close(out.cpu(), torch.polar(a.abs(), a))


def test_lazy_conj_and_neg_bits():
    z = torch.complex(make((5,), grad=False), make((5,), grad=False, seed=1))
    t = z.to("tpu")
    torch.testing.assert_close(t.conj().cpu(), z.conj())  # copy_ applies the conj bit
    torch.testing.assert_close(t.conj().resolve_conj().cpu(), z.conj())
    torch.testing.assert_close(t.conj().imag.cpu(), z.conj().imag)  # a neg-bit view
    torch.testing.assert_close(t.conj().imag.resolve_neg().cpu(), -z.imag)
    w = torch.zeros_like(t)
    w.conj().copy_(t)  # writing through a conj view stores conjugated values
    torch.testing.assert_close(w.cpu(), z.conj())
    out = torch.empty_like(t)
    torch.conj_physical(t, out=out)
    torch.testing.assert_close(out.cpu(), z.conj())
    check_op(
        lambda v: torch.view_as_real(torch.conj_physical(v)), z.clone().requires_grad_(), grad=True
    )


def test_sgn_complex():
    z = torch.complex(make((6,), grad=False), make((6,), grad=False, seed=1))
    z[2] = 0
    check_op(torch.sgn, z)
    check_op(lambda v: torch.view_as_real(torch.sgn(v)), z.clone().requires_grad_(), grad=True)


def test_complex_to_real_unary():
    # abs / angle / isnan / isinf of complex inputs have real or bool results.
    z = torch.complex(make((8,), grad=False), make((8,), grad=False, seed=1))
    z[1] = complex(1, float("nan"))
    z[2] = complex(float("inf"), 1)
    z[3] = 0
    for fn in (torch.abs, torch.angle, torch.isnan, torch.isinf, torch.isfinite):
        check_op(fn, z)
    w = torch.complex(make((5,), grad=False), make((5,), grad=False, seed=2)).requires_grad_()
    check_op(torch.abs, w, grad=True)
    check_op(torch.angle, w, grad=True)
