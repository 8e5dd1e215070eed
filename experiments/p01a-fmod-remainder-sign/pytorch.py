"""p01a, PyTorch side: `torch.fmod` keeps the dividend's sign (C's fmod), `%` / `torch.remainder`
the divisor's (Python's %). Dividends are a ramp with negatives, divisors +0.3 and -0.3."""

import numpy as np
import torch

from pita.torch_dump import write_torch_dump
from pita_lab.args import experiment_args
from pita_lab.inputs import inputs_sha256, ramp

# book:begin setup
X = np.concatenate([ramp(24), ramp(24)])  # 0.1·k − 0.5 for k = 0..23, twice
Y = np.array([0.3] * 24 + [-0.3] * 24, dtype=np.float32)  # each dividend against +0.3 and -0.3
# book:end


def main():
    args = experiment_args(("ref",))
    input_sha256 = inputs_sha256(X, Y)
    x, y = torch.tensor(X), torch.tensor(Y)
    # book:begin ref
    fmod = torch.fmod(x, y)  # sign of x
    remainder = x % y  # sign of y, same as torch.remainder(x, y)
    # book:end
    print(f"x / y in float32 at x = {X[20]}: {(x / y)[20].item():.9g}")
    for name, value in (("fmod", fmod), ("remainder", remainder)):
        print(f"{name}(1.5, 0.3) = {value[20].item():.9g}, {name}(-0.4, 0.3) = {value[1].item():.9g}, {name}(-0.4, -0.3) = {value[25].item():.9g}")
    tensors = {"x": x, "y": y, "fmod": fmod, "remainder": remainder}
    write_torch_dump(args.out / "torch-ref.safetensors", tensors, experiment="p01a", variant="ref", input_sha256=input_sha256)


if __name__ == "__main__":
    main()
