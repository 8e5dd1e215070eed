"""Guide 「backward 与梯度的「非标量输出」」, PyTorch side: `y.backward(v)` (`backward-v`),
`torch.autograd.grad(y, (x, w), v)` (`autograd-grad`), `y.backward(torch.ones_like(y))`
(`backward-ones`) and plain `y.backward()` on a non-scalar `y` (`plain`, which raises)."""

import torch

from pita.torch_dump import write_torch_dump
from pita_lab.args import experiment_args
from pita_lab.inputs import inputs_sha256, ramp

VARIANTS = ("backward-v", "autograd-grad", "backward-ones", "plain")


def main():
    args = experiment_args(VARIANTS)
    x_values, w_values, v_values = ramp(6), ramp(6, 6), ramp(4, 12)
    input_sha256 = inputs_sha256(x_values, w_values, v_values)
    # book:begin setup
    x = torch.from_numpy(x_values).reshape(2, 3).requires_grad_()
    w = torch.from_numpy(w_values).reshape(3, 2).requires_grad_()
    v = torch.from_numpy(v_values).reshape(2, 2)  # the "gradient" argument: one weight per element of y
    y = x @ w  # [2, 2]: not a scalar
    # book:end
    if args.variant == "backward-v":
        # book:begin backward_v
        y.backward(v)
        x_grad, w_grad = x.grad, w.grad
        # book:end
    elif args.variant == "autograd-grad":
        # book:begin autograd_grad
        x_grad, w_grad = torch.autograd.grad(y, (x, w), v)  # returned, not stored in .grad
        # book:end
        assert x.grad is None and w.grad is None
    elif args.variant == "backward-ones":
        # book:begin backward_ones
        y.backward(torch.ones_like(y))
        x_grad, w_grad = x.grad, w.grad
        # book:end
    else:
        # book:begin plain
        y.backward()
        # book:end
    print("x.grad", x_grad.reshape(-1).tolist())
    print("w.grad", w_grad.reshape(-1).tolist())
    out = args.out / f"torch-{args.variant}.safetensors"
    write_torch_dump(out, {"x.grad": x_grad, "w.grad": w_grad}, experiment="nonscalar-backward", variant=args.variant,
                     input_sha256=input_sha256)


if __name__ == "__main__":
    main()
