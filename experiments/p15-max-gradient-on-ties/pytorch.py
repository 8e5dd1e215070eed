"""p15, PyTorch side: the gradient of max() and torch.maximum when the maximum is tied."""

import torch

from pita.torch_dump import write_torch_dump
from pita_lab.args import experiment_args
from pita_lab.inputs import inputs_sha256

# book:begin setup
MAX_X = [1.0, 3.0, 3.0]  # the maximum 3 appears twice
PAIR_A = [2.0, 1.0]  # maximum(a, b): a[0] == b[0] is a tie
PAIR_B = [2.0, 3.0]
# book:end


def leaf(values):
    return torch.tensor(values, requires_grad=True)


def main():
    args = experiment_args(("ref",))
    input_sha256 = inputs_sha256(MAX_X, PAIR_A, PAIR_B)
    # book:begin ref
    x = leaf(MAX_X)
    x.max().backward()  # full reduction
    x_dim = leaf(MAX_X)
    x_dim.max(dim=0).values.backward()  # along a dim: values and indices
    a, b = leaf(PAIR_A), leaf(PAIR_B)
    torch.maximum(a, b).sum().backward()
    # book:end
    print("max()          x.grad", x.grad.tolist())
    print("max(dim=0)     x.grad", x_dim.grad.tolist())
    print("maximum(a, b)  a.grad", a.grad.tolist(), "b.grad", b.grad.tolist())
    tensors = {"max.grad": x.grad, "max_dim.grad": x_dim.grad, "maximum.a.grad": a.grad, "maximum.b.grad": b.grad}
    out = args.out / f"torch-{args.variant}.safetensors"
    write_torch_dump(out, tensors, experiment="p15", variant=args.variant, input_sha256=input_sha256)


if __name__ == "__main__":
    main()
