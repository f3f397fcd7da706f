"""UNet: a tiny diffusers UNet2DConditionModel learns DDPM noise prediction on synthetic
class-conditioned latents, then turns fresh noise into samples in 10 DDIM steps (eta=1).

python examples/unet.py [--mode strict|fused|compile] [--steps 150] [--dtype f32|bf16]
"""

import math

import torch
import torch.nn.functional as F
from common import Workload, eager_mode, main
from diffusers import DDIMScheduler, DDPMScheduler, UNet2DConditionModel

SIZE, CHANNELS, CLASSES, TOKENS, COND_DIM, BATCH = 16, 4, 4, 8, 32, 16
SAMPLE_STEPS = 10
# Stable Diffusion's noise schedule: it keeps more of the signal past the middle than DDPM's
# linear one (alpha_bar at t=500: 0.28 against 0.08; at t=750: 0.056 against 0.0033).
SCHEDULE = dict(
    num_train_timesteps=1000, beta_schedule="scaled_linear", beta_start=0.00085, beta_end=0.012
)


def unet():
    # A config this small is built locally: nothing is fetched from the hub.
    return UNet2DConditionModel(
        sample_size=SIZE,
        in_channels=CHANNELS,
        out_channels=CHANNELS,
        block_out_channels=(32, 64),
        layers_per_block=1,
        down_block_types=("CrossAttnDownBlock2D", "DownBlock2D"),
        up_block_types=("UpBlock2D", "CrossAttnUpBlock2D"),
        cross_attention_dim=COND_DIM,
        # diffusers reads this as the number of heads (a historical misnomer): 4 heads of 8 or 16.
        attention_head_dim=4,
        norm_num_groups=8,
    )


class Data:
    """Latents striped by a plane wave whose direction and colour (its mix over the 4 channels)
    depend on the class, at a random phase and amplitude, with a per-class conditioning
    sequence that tells the classes apart."""

    def __init__(self, seed):
        g = torch.Generator().manual_seed(seed)
        angle = torch.arange(CLASSES) * (math.pi / CLASSES)
        self.waves = 2 * math.pi * 1.5 * torch.stack([angle.cos(), angle.sin()], 1)
        # Norm 2 over 4 channels: about unit variance per value, as diffusion models expect of
        # latents (Stable Diffusion rescales its VAE latents to that).
        self.colors = 2 * F.normalize(torch.randn(CLASSES, CHANNELS, generator=g), dim=1)
        self.tokens = torch.randn(CLASSES, TOKENS, COND_DIM, generator=g)
        self.generator = g
        grid = (torch.arange(SIZE) + 0.5) / SIZE
        self.phases = self.waves @ torch.stack(torch.meshgrid(grid, grid, indexing="xy")).flatten(1)

    def sample(self, labels, g):
        n = len(labels)
        shift = 2 * math.pi * torch.rand(n, 1, generator=g)
        amplitude = 0.75 + 0.5 * torch.rand(n, 1, 1, 1, generator=g)
        stripes = torch.cos(self.phases[labels] + shift).view(n, 1, SIZE, SIZE)
        latents = amplitude * self.colors[labels][:, :, None, None] * stripes
        cond = self.tokens[labels] + 0.1 * torch.randn(n, TOKENS, COND_DIM, generator=g)
        return latents, cond

    def classify(self, latents):
        """The class whose wave, at its best phase, matches each latent most."""
        waves = torch.polar(torch.ones_like(self.phases), self.phases).view(CLASSES, 1, SIZE, SIZE)
        filters = self.colors[:, :, None, None] * waves  # [classes, channels, size, size]
        return (
            torch.einsum("nchw,kchw->nk", latents.to(filters.dtype), filters.conj()).abs().argmax(1)
        )


def workload(args):
    data = Data(args.seed)
    scheduler = DDPMScheduler(**SCHEDULE)

    def batch(step):
        g = data.generator
        labels = torch.randint(0, CLASSES, (BATCH,), generator=g)
        latents, cond = data.sample(labels, g)
        # Drawn on the CPU with the example's generator: the same run on every device and
        # no random op inside the step's program.
        noise = torch.randn(latents.shape, generator=g)
        timesteps = torch.randint(0, SCHEDULE["num_train_timesteps"], (BATCH,), generator=g)
        return latents, noise, timesteps, cond

    def loss(model, latents, noise, timesteps, cond):
        noisy = scheduler.add_noise(latents, noise, timesteps)
        pred = model(noisy, timesteps, encoder_hidden_states=cond).sample
        return F.mse_loss(pred.float(), noise)

    w = Workload(unet(), batch, loss, items=BATCH, unit="images", lr=2e-3)
    w.data = data
    return w


@torch.no_grad()
def denoise(model, cond, generator, mode, dtype):
    """Samples latents from pure noise in SAMPLE_STEPS steps. The latents, the timestep (a
    tensor) and the step's noise keep one shape and dtype at every step, so every step runs the
    same compiled program with new values."""
    model.eval()
    device = next(model.parameters()).device
    scheduler = DDIMScheduler(**SCHEDULE, clip_sample=False, set_alpha_to_one=False)
    scheduler.set_timesteps(SAMPLE_STEPS)
    shape = (len(cond), CHANNELS, SIZE, SIZE)
    x = torch.randn(shape, generator=generator).to(device)
    cond = cond.to(device)
    autocast = torch.autocast(device.type, dtype=torch.bfloat16, enabled=dtype == "bf16")
    with eager_mode(mode, device):
        for t in scheduler.timesteps:
            with autocast:
                eps = model(x, t.to(device), encoder_hidden_states=cond).sample
            # eta=1 is DDPM's ancestral sampling on DDIM's strided timesteps: its fresh noise
            # forgives a briefly trained model's errors better than deterministic DDIM (eta=0).
            noise = torch.randn(shape, generator=generator).to(device)
            x = scheduler.step(eps.float(), t, x, eta=1.0, variance_noise=noise).prev_sample
        return x.cpu()


def nearest(samples, reference):
    """Mean squared distance of each sample to its nearest reference latent."""
    distance = torch.cdist(samples.flatten(1), reference.flatten(1)).min(1).values
    return distance**2 / samples[0].numel()


if __name__ == "__main__":
    args, w, result = main("UNet", workload, __doc__, steps=150)
    g = torch.Generator().manual_seed(args.seed + 1)
    labels = torch.arange(CLASSES).repeat(2)
    _, cond = w.data.sample(labels, g)
    samples = denoise(w.model, cond, g, args.mode, args.dtype)
    held_out, _ = w.data.sample(torch.randint(0, CLASSES, (512,), generator=g), g)
    fresh, _ = w.data.sample(labels, g)
    noise = torch.randn(samples.shape, generator=g)
    matched = (w.data.classify(samples) == labels).sum()
    print(
        f"samples {tuple(samples.shape)}: mean {samples.mean():.3f} std {samples.std():.3f} "
        f"(data: mean {held_out.mean():.3f} std {held_out.std():.3f}); "
        f"distance to the nearest data latent {nearest(samples, held_out).mean():.3f} "
        f"(fresh data: {nearest(fresh, held_out).mean():.3f}, "
        f"pure noise: {nearest(noise, held_out).mean():.3f}); "
        f"{matched}/{len(labels)} striped like the class they were conditioned on"
    )
