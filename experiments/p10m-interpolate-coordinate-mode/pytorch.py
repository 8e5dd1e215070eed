"""p10m, PyTorch side: bilinear and bicubic resizing of a 4×4 image with F.interpolate's default
coordinate mapping (align_corners=False), to 6×6 and to one pixel."""

import torch
import torch.nn.functional as F

from pita.torch_dump import write_torch_dump
from pita_lab.args import experiment_args
from pita_lab.inputs import inputs_sha256, ramp

# book:begin setup
IMAGE = ramp(16, 0)  # one channel, 4×4
CASES = {  # tensor name: (mode, output size)
    "bilinear": ("bilinear", (6, 6)),
    "bicubic": ("bicubic", (6, 6)),
    "bilinear.1x1": ("bilinear", (1, 1)),  # an output axis of one pixel
}
# book:end


def main():
    args = experiment_args(("ref",))
    input_sha256 = inputs_sha256(IMAGE)
    x = torch.from_numpy(IMAGE).reshape(1, 1, 4, 4)  # [N, C, H, W]
    tensors = {}
    for name, (mode, size) in CASES.items():
        # book:begin ref
        out = F.interpolate(x, size=size, mode=mode)  # align_corners=None: False, half-pixel
        # book:end
        tensors[name] = out
        print(f"{name} {list(size)} row 0 {out[0, 0, 0].tolist()}")
    write_torch_dump(args.out / f"torch-{args.variant}.safetensors", tensors,
                     experiment="p10m", variant=args.variant, input_sha256=input_sha256)


if __name__ == "__main__":
    main()
