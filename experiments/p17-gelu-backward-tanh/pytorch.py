"""p17, PyTorch side: the gradient of sum(gelu(x)) with the exact GELU, and for comparison the
exact forward paired with the derivative of the tanh approximation."""

import torch

from pita.torch_dump import write_torch_dump
from pita_lab.args import experiment_args
from pita_lab.inputs import inputs_sha256

# book:begin setup
X = [-3.0, -2.0, -1.0, -0.5, 0.5, 1.0, 2.0, 3.0]
# book:end


def main():
    args = experiment_args(("exact", "tanh-grad"))
    input_sha256 = inputs_sha256(X)
    x = torch.tensor(X, requires_grad=True)
    if args.variant == "exact":
        # book:begin exact
        y = torch.nn.functional.gelu(x)  # approximate="none": 0.5·x·(1 + erf(x/√2))
        y.sum().backward()
        grad = x.grad
        # book:end
    else:
        # What a backend without an exact gelu_backward computes: the exact forward, and the
        # derivative of the tanh approximation.
        # book:begin tanh_grad
        y = torch.nn.functional.gelu(x)
        (grad,) = torch.autograd.grad(torch.nn.functional.gelu(x, approximate="tanh").sum(), x)
        # book:end
    print("x", X)
    print("gelu(x)", y.tolist())
    print("x.grad", grad.tolist())
    tensors = {"x": x, "gelu(x)": y, "x.grad": grad}
    out = args.out / f"torch-{args.variant}.safetensors"
    write_torch_dump(out, tensors, experiment="p17", variant=args.variant, input_sha256=input_sha256)


if __name__ == "__main__":
    main()
