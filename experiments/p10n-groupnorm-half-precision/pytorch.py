"""p10n, PyTorch side: GroupNorm(4, 64) on a [1, 64, 64, 64] input (65 536 values per group), in
float32 and in float16."""

import numpy as np
import torch

from pita.torch_dump import write_torch_dump
from pita_lab.args import experiment_args
from pita_lab.inputs import inputs_sha256

# book:begin setup
SHAPE = (1, 64, 64, 64)  # [N, C, H, W]
GROUPS = 4  # 64/4 channels × 64 × 64 = 65 536 values per group
IMAGE = (0.5 + 0.25 * (np.arange(np.prod(SHAPE)) % 7)).astype(np.float32)  # 0.5 … 2.0, exact in float16
# book:end


def main():
    args = experiment_args(("f32", "f16"))
    input_sha256 = inputs_sha256(IMAGE)
    x = torch.from_numpy(IMAGE).reshape(SHAPE)
    norm = torch.nn.GroupNorm(GROUPS, SHAPE[1], affine=False)  # eps 1e-5
    if args.variant == "f16":
        # book:begin f16
        out = norm.half()(x.half())
        # book:end
    else:
        out = norm(x)
    first = out[0, 0, 0, :7]
    print(f"output dtype {out.dtype}; max |out| {out.abs().max().item()}; first values {first.tolist()}")
    write_torch_dump(args.out / f"torch-{args.variant}.safetensors", {"out": out, "out.first": first.reshape(1, 1, 1, 7)},
                     experiment="p10n", variant=args.variant, input_sha256=input_sha256)


if __name__ == "__main__":
    main()
