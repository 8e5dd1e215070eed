"""p20, PyTorch side: a few Adam (and AdaGrad) steps on gradients of very different sizes."""

import torch

from pita.torch_dump import write_torch_dump
from pita_lab.args import experiment_args
from pita_lab.inputs import inputs_sha256

# book:begin setup
W0 = [0.0, 0.0, 0.0, 0.0]
GRAD = [1e-6, 1e-4, 1e-2, 1.0]  # loss = Σ GRAD·w, so w.grad is exactly GRAD
LR = 1e-3  # PyTorch Adam's default lr
STEPS = 3
# book:end


def main():
    args = experiment_args(("adam", "adagrad", "defaults"))
    if args.variant == "defaults":
        # book:begin defaults
        for optimizer in (torch.optim.Adam, torch.optim.AdamW, torch.optim.RMSprop, torch.optim.Adagrad):
            print(f"{optimizer.__name__:8} eps={optimizer([torch.nn.Parameter(torch.zeros(1))]).defaults['eps']}")
        # book:end
        return
    w0 = torch.tensor(W0)
    g = torch.tensor(GRAD)
    input_sha256 = inputs_sha256(w0.numpy(), g.numpy())
    w = torch.nn.Parameter(w0.clone())
    if args.variant == "adam":
        # book:begin adam
        optimizer = torch.optim.Adam([w], lr=LR)
        # book:end
    else:
        # book:begin adagrad
        optimizer = torch.optim.Adagrad([w], lr=LR)
        # book:end
    eps = optimizer.defaults["eps"]
    print(f"{type(optimizer).__name__} eps={eps}")
    # book:begin steps
    for step in range(1, STEPS + 1):
        optimizer.zero_grad()
        loss = (g * w).sum()
        loss.backward()
        optimizer.step()
        print(f"step {step} w {w.tolist()}")
    # book:end
    out = args.out / f"torch-{args.variant}.safetensors"
    write_torch_dump(out, {"w": w, "w.grad": w.grad}, experiment="p20", variant=args.variant, input_sha256=input_sha256,
                     epsilon=eps, lr=LR, steps=STEPS)


if __name__ == "__main__":
    main()
