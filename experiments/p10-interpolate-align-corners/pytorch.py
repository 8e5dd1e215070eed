"""p10, PyTorch side: bilinear upsampling 2×2 → 4×4 with F.interpolate's default align_corners."""

import inspect

import torch
import torch.nn.functional as F

from pita.torch_dump import write_torch_dump
from pita_lab.args import experiment_args
from pita_lab.inputs import inputs_sha256

# book:begin setup
IMAGE = [[0.0, 1.0], [2.0, 3.0]]  # one channel, 2×2
SIZE = (4, 4)
# book:end


def main():
    args = experiment_args(("ref",))
    input_sha256 = inputs_sha256(IMAGE)
    x = torch.tensor(IMAGE).reshape(1, 1, 2, 2)  # [N, C, H, W]
    # book:begin ref
    out = F.interpolate(x, size=SIZE, mode="bilinear")  # align_corners=None, i.e. False
    # book:end
    print("nn.Upsample align_corners:", torch.nn.Upsample(size=SIZE, mode="bilinear").align_corners)
    for row in out[0, 0].tolist():
        print("out row", row)
    write_torch_dump(args.out / f"torch-{args.variant}.safetensors", {"out": out},
                     experiment="p10", variant=args.variant, input_sha256=input_sha256,
                     align_corners=inspect.signature(F.interpolate).parameters["align_corners"].default)  # for the defaults table


if __name__ == "__main__":
    main()
