"""p16, PyTorch side: two losses share an intermediate; backward through it twice, with and
without retain_graph."""

import torch

from pita.torch_dump import write_torch_dump
from pita_lab.args import experiment_args
from pita_lab.inputs import inputs_sha256

# book:begin setup
W = [1.0, 2.0]
V = [0.5, -1.0]
# book:end


def main():
    args = experiment_args(("noretain", "retain"))
    input_sha256 = inputs_sha256(W, V)
    # book:begin forward
    w = torch.tensor(W, requires_grad=True)
    v = torch.tensor(V, requires_grad=True)
    h = w * w  # shared by both losses
    l1 = h.sum()
    l2 = (h * v).sum()
    # book:end
    if args.variant == "noretain":
        # book:begin noretain
        l1.backward()
        l2.backward()
        # book:end
    else:
        # book:begin retain
        l1.backward(retain_graph=True)
        l2.backward()  # .grad accumulates: w.grad = dl1/dw + dl2/dw
        # book:end
    print("w.grad", w.grad.tolist())
    print("v.grad", v.grad.tolist())
    out = args.out / f"torch-{args.variant}.safetensors"
    write_torch_dump(out, {"w.grad": w.grad, "v.grad": v.grad}, experiment="p16", variant=args.variant, input_sha256=input_sha256)


if __name__ == "__main__":
    main()
