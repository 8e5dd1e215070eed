"""p20a, PyTorch side: Adam with every hyper-parameter matched still drifts from burn; a hand-written
Adam step shows the drift comes from the precision of the bias corrections `1 - β^t`."""

import math

import numpy as np
import torch

from pita.torch_dump import write_torch_dump
from pita_lab.args import experiment_args
from pita_lab.inputs import inputs_sha256, ramp

# book:begin setup
W0 = ramp(4, 0)  # [-0.5, -0.4, -0.3, -0.2]
GRAD = ramp(4, 6)  # [0.1, 0.2, 0.3, 0.4]; loss = Σ GRAD·w, so w.grad is exactly GRAD
LR = 0.1
BETAS = (0.9, 0.999)
EPS = 1e-8
STEPS = 10
# book:end


# book:begin powi
def powi(base, n: int):
    """`powi` as Rust's compiler builtins compute it: square-and-multiply, every product rounded
    in the base's own precision (np.float32 for burn's f32 step, float for the f64 one)."""
    result = type(base)(1.0)
    while True:
        if n & 1:
            result = result * base
        n //= 2
        if n == 0:
            return result
        base = base * base
# book:end


def f32(x) -> float:
    """A Python float holding exactly the f32 value (so a tensor op sees no further rounding)."""
    return float(np.float32(x))


def hand_adam(w, g, bias_precision: str):
    """burn's AdaptiveMomentum::transform + Adam::step, op for op on f32 tensors. Only the four
    scalars of the bias correction differ between the two precisions."""
    b1, b2, eps = np.float32(BETAS[0]), np.float32(BETAS[1]), np.float32(EPS)  # AdamConfig stores f32
    m = torch.zeros_like(w)
    v = torch.zeros_like(w)
    for t in range(1, STEPS + 1):
        m = m * f32(b1) + g * f32(np.float32(1.0) - b1)
        v = v * f32(b2) + g.square() * f32(np.float32(1.0) - b2)
        # book:begin bias_correction
        if bias_precision == "f32":  # burn: (1.0 - self.beta_2.powi(time)).sqrt() on f32
            bc2_sqrt = np.sqrt(np.float32(1.0) - powi(b2, t))
            combined = np.float32(bc2_sqrt / (np.float32(1.0) - powi(b1, t)))
            eps_term = np.float32(eps * bc2_sqrt)
        else:  # the same formula in float64, as the burn fix writes it (the f32 betas widened exactly)
            bc2_sqrt = math.sqrt(1.0 - powi(float(b2), t))
            combined = bc2_sqrt / (1.0 - powi(float(b1), t))
            eps_term = float(eps) * bc2_sqrt
        # book:end
        update = (m * f32(combined)) / (v.sqrt() + f32(eps_term))
        w = w - update * f32(LR)
        print(f"step {t} combined_factor {float(combined):.9g} w {w.tolist()}")
    return w


def main():
    args = experiment_args(("adam", "f32-bias", "f64-bias"))
    w0 = torch.tensor(W0)
    g = torch.tensor(GRAD)
    input_sha256 = inputs_sha256(W0, GRAD)
    if args.variant == "adam":
        w = torch.nn.Parameter(w0.clone())
        # book:begin adam
        optimizer = torch.optim.Adam([w], lr=LR, betas=BETAS, eps=EPS, foreach=False)
        for step in range(1, STEPS + 1):
            optimizer.zero_grad()
            loss = (g * w).sum()
            loss.backward()
            optimizer.step()
            print(f"step {step} w {w.tolist()}")
        # book:end
        grad = w.grad
    else:
        w = hand_adam(w0.clone(), g, args.variant.split("-")[0])
        grad = g
    out = args.out / f"torch-{args.variant}.safetensors"
    write_torch_dump(out, {"w": w, "w.grad": grad}, experiment="p20a", variant=args.variant, input_sha256=input_sha256,
                     lr=LR, beta_1=BETAS[0], beta_2=BETAS[1], epsilon=EPS, steps=STEPS)


if __name__ == "__main__":
    main()
