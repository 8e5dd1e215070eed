"""p10k, PyTorch side: F.interpolate with a scale factor whose output size is not a whole number."""

import torch
import torch.nn.functional as F

from pita.torch_dump import write_torch_dump
from pita_lab.args import experiment_args
from pita_lab.inputs import inputs_sha256, ramp

# book:begin setup
IMAGE = ramp(25, 0) / 4  # one channel, 5×5 (÷4 is exact in float32)
EVEN = ramp(16, 0) / 4   # one channel, 4×4
UP, DOWN = 1.5, 0.75
CASES = {  # name: (input, side, scale factor); 5·1.5 = 7.5, 5·0.75 = 3.75, 4·1.5 = 6
    "up": (IMAGE, 5, UP),
    "down": (IMAGE, 5, DOWN),
    "even": (EVEN, 4, UP),
}
MODES = ("nearest", "bilinear", "bicubic")
# book:end


def resize(x, scale, mode, variant):
    corners = {} if mode == "nearest" else {"align_corners": False}  # p10: burn's default is true
    if variant == "ref":
        # book:begin ref
        out = F.interpolate(x, scale_factor=scale, mode=mode, **corners)
        # book:end
    elif variant == "recompute":
        # book:begin recompute
        out = F.interpolate(x, scale_factor=scale, mode=mode, recompute_scale_factor=True, **corners)
        # book:end
    else:
        # book:begin antialias
        antialias = mode != "nearest"  # PyTorch has it for bilinear and bicubic only
        out = F.interpolate(x, scale_factor=scale, mode=mode, antialias=antialias, **corners)
        # book:end
    return out


def main():
    args = experiment_args(("ref", "recompute", "antialias"))
    input_sha256 = inputs_sha256(IMAGE, EVEN)
    tensors, metadata = {}, {}
    for case, (values, side, scale) in CASES.items():
        x = torch.from_numpy(values).reshape(1, 1, side, side)  # [N, C, H, W]
        metadata |= {f"{case}.scale": scale, f"{case}.side": side}  # for the chapter's sampling positions
        for mode in MODES:
            out = resize(x, scale, mode, args.variant)
            tensors[f"{mode}.{case}"] = out
            print(f"{mode}.{case} {list(x.shape[2:])} -> {list(out.shape[2:])} row 0 {out[0, 0, 0].tolist()}")
    write_torch_dump(args.out / f"torch-{args.variant}.safetensors", tensors,
                     experiment="p10k", variant=args.variant, input_sha256=input_sha256, **metadata)


if __name__ == "__main__":
    main()
