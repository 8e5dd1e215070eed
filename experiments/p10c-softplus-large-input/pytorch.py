"""p10c, PyTorch side: nn.Softplus on large inputs, forward and gradient."""

import torch

from pita.torch_dump import write_torch_dump
from pita_lab.args import experiment_args
from pita_lab.inputs import inputs_sha256

# book:begin setup
# Small exact constants: both tails, the kink region, both sides of threshold 20, and past
# f32's exp overflow (exp(x) is inf in f32 from x ≈ 88.73).
X = [-100.0, -20.0, -1.0, 0.0, 1.0, 19.5, 20.0, 20.5, 88.0, 89.0, 100.0]
# book:end


def main():
    args = experiment_args(("ref",))
    input_sha256 = inputs_sha256(X)
    x = torch.tensor(X, requires_grad=True)
    # book:begin ref
    softplus = torch.nn.Softplus()  # beta=1, threshold=20
    y = softplus(x)
    y.sum().backward()
    # book:end
    print("y", y.tolist())
    print("x.grad", x.grad.tolist())
    out = args.out / f"torch-{args.variant}.safetensors"
    write_torch_dump(out, {"x": x, "y": y, "x.grad": x.grad}, experiment="p10c", variant=args.variant, input_sha256=input_sha256)


if __name__ == "__main__":
    main()
