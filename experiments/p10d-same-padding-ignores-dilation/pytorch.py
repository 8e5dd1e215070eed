"""p10d, PyTorch side: a dilated Conv1d with padding="same", alone and in a residual block."""

import torch

from pita.torch_dump import write_torch_dump
from pita_lab.args import experiment_args
from pita_lab.inputs import inputs_sha256, ramp

# book:begin setup
LENGTH = 10
KERNEL_SIZE = 3
DILATION = 2
WEIGHT = [0.5, -0.25, 0.75]  # one input channel, one output channel
BIAS = [0.125]
# book:end


def main():
    args = experiment_args(("same", "residual"))
    inputs = ramp(LENGTH)
    input_sha256 = inputs_sha256(inputs, WEIGHT, BIAS)
    x = torch.from_numpy(inputs).reshape(1, 1, LENGTH)
    # book:begin conv
    conv = torch.nn.Conv1d(1, 1, KERNEL_SIZE, dilation=DILATION, padding="same")
    # book:end
    with torch.no_grad():
        conv.weight.copy_(torch.tensor(WEIGHT).reshape(1, 1, KERNEL_SIZE))
        conv.bias.copy_(torch.tensor(BIAS))
    with torch.no_grad():
        if args.variant == "same":
            out = conv(x)
        else:
            # book:begin residual
            out = x + conv(x)
            # book:end
    print("x shape", list(x.shape), "out shape", list(out.shape))
    print("out", out.reshape(-1).tolist())
    path = args.out / f"torch-{args.variant}.safetensors"
    write_torch_dump(path, {"out": out}, experiment="p10d", variant=args.variant, input_sha256=input_sha256,
                     kernel_size=KERNEL_SIZE, dilation=DILATION)


if __name__ == "__main__":
    main()
