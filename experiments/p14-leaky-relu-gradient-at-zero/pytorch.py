"""p14, PyTorch side: the gradient of LeakyReLU and PReLU at an input of exactly 0."""

import torch

from pita.torch_dump import write_torch_dump
from pita_lab.args import experiment_args
from pita_lab.inputs import inputs_sha256

# book:begin setup
X = [-1.0, -0.5, 0.0, 0.5, 1.0]  # x[2] is exactly 0, the kink of both activations
# book:end
KINKS = "0"  # recorded in the dump


def main():
    args = experiment_args(("ref",))
    input_sha256 = inputs_sha256(X)
    # book:begin ref
    leaky = torch.nn.LeakyReLU()  # negative_slope=0.01
    prelu = torch.nn.PReLU()  # one weight, 0.25
    x1 = torch.tensor(X, requires_grad=True)
    leaky_out = leaky(x1)
    leaky_out.sum().backward()
    x2 = torch.tensor(X, requires_grad=True)
    prelu_out = prelu(x2)
    prelu_out.sum().backward()
    # book:end
    print("leaky_relu x.grad", x1.grad.tolist())
    print("prelu      x.grad", x2.grad.tolist(), "weight.grad", prelu.weight.grad.tolist())
    tensors = {
        "leaky_relu.x": x1, "leaky_relu.out": leaky_out, "leaky_relu.grad": x1.grad,
        "prelu.x": x2, "prelu.out": prelu_out, "prelu.grad": x2.grad, "prelu.weight.grad": prelu.weight.grad,
    }
    out = args.out / f"torch-{args.variant}.safetensors"
    write_torch_dump(out, tensors, experiment="p14", variant=args.variant, input_sha256=input_sha256,
                     **{"leaky_relu.kinks": KINKS, "prelu.kinks": KINKS})


if __name__ == "__main__":
    main()
