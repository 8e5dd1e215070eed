"""p08, PyTorch side: Xavier-uniform on a Linear's weight leaves the bias at its default U(±1/√fan_in)."""

import math

import numpy as np
import torch

from pita.torch_dump import write_torch_dump
from pita_lab.args import experiment_args
from pita_lab.inputs import inputs_sha256

# book:begin setup
FAN_IN, FAN_OUT = 256, 256
SEED = 0
# book:end


def stats(weight: np.ndarray, bias: np.ndarray) -> tuple[dict, dict]:
    """The statistics both sides dump: bounds in float64, fractions beyond them as tensors."""
    default_bound = 1 / math.sqrt(FAN_IN)  # PyTorch's default Linear init, weight and bias
    xavier_bound = math.sqrt(6 / (FAN_IN + FAN_OUT))  # Xavier-uniform, gain 1
    w, b = np.abs(weight.astype(np.float64)), np.abs(bias.astype(np.float64))
    tensors = {
        "bias.beyond_default_bound": torch.tensor([np.mean(b > default_bound)], dtype=torch.float32),
        "weight.beyond_xavier_bound": torch.tensor([np.mean(w > xavier_bound)], dtype=torch.float32),
    }
    metadata = {
        "default_bound": repr(default_bound), "xavier_bound": repr(xavier_bound),
        "bias_max_abs": repr(float(b.max())), "weight_max_abs": repr(float(w.max())),
        "bias_std": repr(float(bias.astype(np.float64).std())), "weight_std": repr(float(weight.astype(np.float64).std())),
    }
    return tensors, metadata


def main():
    args = experiment_args(("ref",))
    input_sha256 = inputs_sha256([FAN_IN, FAN_OUT])
    torch.manual_seed(SEED)
    # book:begin ref
    fc = torch.nn.Linear(FAN_IN, FAN_OUT)
    torch.nn.init.xavier_uniform_(fc.weight)  # the bias keeps nn.Linear's default init
    # book:end
    tensors, metadata = stats(fc.weight.detach().numpy(), fc.bias.detach().numpy())
    print(f"default bound 1/sqrt(fan_in) = {float(metadata['default_bound']):.6g}, "
          f"xavier bound sqrt(6/(fan_in+fan_out)) = {float(metadata['xavier_bound']):.6g}")
    print(f"weight max|w| = {float(metadata['weight_max_abs']):.6g}, std = {float(metadata['weight_std']):.6g}")
    print(f"bias   max|b| = {float(metadata['bias_max_abs']):.6g}, std = {float(metadata['bias_std']):.6g}")
    for name, value in tensors.items():
        print(f"{name} = {value.item():.6g}")
    write_torch_dump(args.out / f"torch-{args.variant}.safetensors", tensors, experiment="p08", variant=args.variant,
                     input_sha256=input_sha256, fan_in=FAN_IN, fan_out=FAN_OUT, seed=SEED, **metadata)


if __name__ == "__main__":
    main()
