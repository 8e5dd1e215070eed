"""p04a, PyTorch side: a `0` in `reshape` is a literal zero-size axis. Per-sample token selection
that kept nothing (`kept = 0`) reshapes `[batch * kept, dim]` to `[batch, kept, dim]`; a `0`
with `-1` is refused."""

import numpy as np
import torch

from pita.torch_dump import write_torch_dump
from pita_lab.args import experiment_args
from pita_lab.inputs import inputs_sha256, ramp

# book:begin setup
DIM = 4
CASES = {"kept-none": (2, 0), "empty-batch": (0, 0)}  # (batch, kept per sample)
X = ramp(24).reshape(2, 3, DIM)  # for flattening: 0.1·k − 0.5
# book:end


def main():
    args = experiment_args(("ref", "empty-batch", "flatten", "zero-minus-one"))
    if args.variant in ("ref", "empty-batch"):
        batch, kept = CASES["kept-none" if args.variant == "ref" else "empty-batch"]
        input_sha256 = inputs_sha256(np.array([batch, kept, DIM], dtype=np.float32))
        selected = torch.zeros(batch * kept, DIM)  # the rows some selection kept: none
        # book:begin ref
        tokens = selected.reshape(batch, kept, DIM)
        # book:end
        print(f"tokens shape {list(tokens.shape)}")
        tensors = {"input_shape": torch.tensor(selected.shape, dtype=torch.float32), "shape": torch.tensor(tokens.shape, dtype=torch.float32)}
    else:
        input_sha256 = inputs_sha256(X)
        x = torch.tensor(X)
        if args.variant == "flatten":
            # book:begin flatten
            flat = x.reshape(x.shape[0], -1)
            # book:end
        else:
            # book:begin zero-minus-one
            flat = x.reshape(0, -1)
            # book:end
        print(f"flat shape {list(flat.shape)}")
        tensors = {"input_shape": torch.tensor(x.shape, dtype=torch.float32), "shape": torch.tensor(flat.shape, dtype=torch.float32), "flat": flat}
    write_torch_dump(args.out / f"torch-{args.variant}.safetensors", tensors, experiment="p04a", variant=args.variant, input_sha256=input_sha256)


if __name__ == "__main__":
    main()
