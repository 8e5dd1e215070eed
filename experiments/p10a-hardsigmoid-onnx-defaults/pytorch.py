"""p10a, PyTorch side: nn.Hardsigmoid, which is relu6(x + 3) / 6."""

import torch

from pita.torch_dump import write_torch_dump
from pita_lab.args import experiment_args
from pita_lab.inputs import inputs_sha256

# book:begin setup
X = [-3.0, -2.0, -1.0, 0.0, 1.0, 2.0, 3.0]
# book:end


def main():
    args = experiment_args(("ref",))
    input_sha256 = inputs_sha256(X)
    x = torch.tensor(X)
    # book:begin ref
    out = torch.nn.Hardsigmoid()(x)  # x/6 + 1/2, clamped to [0, 1]
    # book:end
    # book:begin hard_swish
    swish = torch.nn.Hardswish()(x)  # x · Hardsigmoid(x)
    # book:end
    print("x  ", X)
    print("out", out.tolist())
    print("hard_swish", swish.tolist())
    write_torch_dump(args.out / f"torch-{args.variant}.safetensors", {"x": x, "out": out, "hard_swish": swish},
                     experiment="p10a", variant=args.variant, input_sha256=input_sha256, alpha=slope_at_zero())


def slope_at_zero() -> float:
    """nn.Hardsigmoid has no alpha to read: its slope is the derivative at 0, in float64."""
    probe = torch.zeros((), dtype=torch.float64, requires_grad=True)
    return torch.autograd.grad(torch.nn.Hardsigmoid()(probe), probe)[0].item()


if __name__ == "__main__":
    main()
