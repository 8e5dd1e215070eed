"""p10o, PyTorch side: nearest-neighbour resizing 3×3 → 5×5, `mode="nearest"` and `mode="nearest-exact"`."""

import torch
import torch.nn.functional as F

from pita.torch_dump import write_torch_dump
from pita_lab.args import experiment_args
from pita_lab.inputs import inputs_sha256

# book:begin setup
IMAGE = [[1.0, 2.0, 3.0], [4.0, 5.0, 6.0], [7.0, 8.0, 9.0]]  # one channel, 3×3
SIZE = (5, 5)  # 5/3 is not a whole number: the two rules pick different source pixels
# book:end


def main():
    args = experiment_args(("nearest", "nearest-exact"))
    input_sha256 = inputs_sha256(IMAGE)
    x = torch.tensor(IMAGE).reshape(1, 1, 3, 3)  # [N, C, H, W]
    if args.variant == "nearest":
        # book:begin nearest
        out = F.interpolate(x, size=SIZE, mode="nearest")  # source index floor(o · in/out)
        # book:end
    else:
        # book:begin nearest_exact
        out = F.interpolate(x, size=SIZE, mode="nearest-exact")  # source index floor((o + 0.5) · in/out)
        # book:end
    for row in out[0, 0].tolist():
        print("out row", row)
    write_torch_dump(args.out / f"torch-{args.variant}.safetensors", {"out": out},
                     experiment="p10o", variant=args.variant, input_sha256=input_sha256)


if __name__ == "__main__":
    main()
