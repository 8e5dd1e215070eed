"""p10j, PyTorch side: a Conv2d with padding=1 and a non-zero `padding_mode` ('reflect',
'replicate', 'circular')."""

import numpy as np
import torch

from pita.torch_dump import write_torch_dump
from pita_lab.args import experiment_args
from pita_lab.inputs import inputs_sha256, ramp

# book:begin setup
C_IN, C_OUT, HEIGHT, WIDTH = 2, 2, 5, 6
KERNEL, PADDING = 3, 1
# book:end


def inputs():
    x = (ramp(C_IN * HEIGHT * WIDTH) / np.float32(8)).astype(np.float32)
    weight = (ramp(C_OUT * C_IN * KERNEL * KERNEL, 3) / np.float32(8)).astype(np.float32)
    bias = np.array([0.125, -0.25], dtype=np.float32)
    return x, weight, bias


def main():
    args = experiment_args(("reflect", "replicate", "circular"))
    x_in, weight, bias = inputs()
    input_sha256 = inputs_sha256(x_in, weight, bias)
    # book:begin conv
    conv = torch.nn.Conv2d(C_IN, C_OUT, KERNEL, padding=PADDING, padding_mode=args.variant)
    # book:end
    with torch.no_grad():
        conv.weight.copy_(torch.from_numpy(weight).reshape(C_OUT, C_IN, KERNEL, KERNEL))
        conv.bias.copy_(torch.from_numpy(bias))
        x = torch.from_numpy(x_in).reshape(1, C_IN, HEIGHT, WIDTH)
        out = conv(x)
    print(f"padding_mode={conv.padding_mode!r} out {list(out.shape)}, channel 0:")
    for row in out[0, 0].tolist():
        print(" ", " ".join(f"{v:8.4f}" for v in row))
    write_torch_dump(args.out / f"torch-{args.variant}.safetensors", {"out": out}, experiment="p10j",
                     variant=args.variant, input_sha256=input_sha256, padding=PADDING,
                     padding_mode=conv.padding_mode, default_padding_mode=torch.nn.Conv2d(1, 1, 1).padding_mode)


if __name__ == "__main__":
    main()
