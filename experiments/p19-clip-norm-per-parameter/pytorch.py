"""p19, PyTorch side: one SGD step after clip_grad_norm_ over all parameters (global norm), and,
for comparison, after clipping each parameter tensor by its own norm."""

import torch

from pita.torch_dump import write_torch_dump
from pita_lab.args import experiment_args
from pita_lab.inputs import inputs_sha256

# book:begin setup
W1 = [1.0, -1.0]
W2 = [0.5, 2.0]
A = [3.0, 4.0]  # loss = sum(w1·a) + sum(w2·b): w1.grad = a, w2.grad = b
B = [6.0, 8.0]
MAX_NORM = 1.0
LR = 1.0
# book:end


def main():
    args = experiment_args(("global", "per-tensor"))
    input_sha256 = inputs_sha256(W1, W2, A, B)
    w1, w2 = torch.nn.Parameter(torch.tensor(W1)), torch.nn.Parameter(torch.tensor(W2))
    params = [w1, w2]
    loss = (w1 * torch.tensor(A)).sum() + (w2 * torch.tensor(B)).sum()
    loss.backward()
    before = [p.detach().clone() for p in params]
    if args.variant == "global":
        # book:begin global
        total_norm = torch.nn.utils.clip_grad_norm_(params, MAX_NORM)
        # book:end
        print("total_norm", total_norm.item())
    else:
        # book:begin per_tensor
        for p in params:
            torch.nn.utils.clip_grad_norm_([p], MAX_NORM)
        # book:end
    # book:begin step
    optimizer = torch.optim.SGD(params, lr=LR)
    optimizer.step()
    # book:end
    # With SGD, the update (before - after) / lr is the clipped gradient the optimizer used.
    update1 = (before[0] - w1.detach()) / LR
    update2 = (before[1] - w2.detach()) / LR
    print("w1.update", update1.tolist())
    print("w2.update", update2.tolist())
    print("w1.step1", w1.detach().tolist())
    print("w2.step1", w2.detach().tolist())
    tensors = {"w1.update": update1, "w2.update": update2, "w1.step1": w1, "w2.step1": w2}
    out = args.out / f"torch-{args.variant}.safetensors"
    write_torch_dump(out, tensors, experiment="p19", variant=args.variant, input_sha256=input_sha256,
                     max_norm=MAX_NORM, lr=LR)


if __name__ == "__main__":
    main()
