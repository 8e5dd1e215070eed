"""p21, PyTorch side: AdamW with its default weight decay, on a parameter with a gradient and on
one whose gradient is zero."""

import torch

from pita.torch_dump import write_torch_dump
from pita_lab.args import experiment_args
from pita_lab.inputs import inputs_sha256

# book:begin setup
W0 = [1.0, -0.5]
GRAD = [0.5, 0.25]  # loss = Σ GRAD·w + 0·Σ idle
IDLE0 = [1.0, -2.0]  # in the graph, gradient 0 (like embedding rows absent from the batch)
LR = 0.1
STEPS = 2
# book:end


def main():
    args = experiment_args(("adamw",))
    input_sha256 = inputs_sha256(W0, GRAD, IDLE0)
    g = torch.tensor(GRAD)
    w = torch.nn.Parameter(torch.tensor(W0))
    idle = torch.nn.Parameter(torch.tensor(IDLE0))
    # book:begin adamw
    optimizer = torch.optim.AdamW([w, idle], lr=LR)
    # book:end
    defaults = optimizer.defaults
    print(f"AdamW weight_decay={defaults['weight_decay']} eps={defaults['eps']}")
    # book:begin steps
    for step in range(1, STEPS + 1):
        optimizer.zero_grad()
        loss = (g * w).sum() + 0 * idle.sum()
        loss.backward()
        optimizer.step()
        print(f"step {step} w {w.tolist()} idle {idle.tolist()}")
    # book:end
    out = args.out / f"torch-{args.variant}.safetensors"
    tensors = {"w": w, "idle": idle, "idle.start": torch.tensor(IDLE0)}
    write_torch_dump(out, tensors, experiment="p21", variant=args.variant, input_sha256=input_sha256,
                     weight_decay=defaults["weight_decay"], epsilon=defaults["eps"], lr=LR, steps=STEPS)


if __name__ == "__main__":
    main()
