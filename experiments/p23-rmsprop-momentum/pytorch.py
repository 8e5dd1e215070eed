"""p23, PyTorch side: RMSprop with its defaults (no momentum), a few steps on a constant gradient."""

import torch

from pita.torch_dump import write_torch_dump
from pita_lab.args import experiment_args
from pita_lab.inputs import inputs_sha256

# book:begin setup
W0 = [0.0, 0.0, 0.0, 0.0]
GRAD = [1.0, -0.5, 0.25, 2.0]  # loss = Σ GRAD·w: the same gradient every step
LR = 0.01  # PyTorch RMSprop's default lr
STEPS = 3
# book:end


def main():
    args = experiment_args(("rmsprop",))
    input_sha256 = inputs_sha256(W0, GRAD)
    g = torch.tensor(GRAD)
    w = torch.nn.Parameter(torch.tensor(W0))
    # book:begin rmsprop
    optimizer = torch.optim.RMSprop([w], lr=LR)
    # book:end
    defaults = optimizer.defaults
    print(f"RMSprop alpha={defaults['alpha']} momentum={defaults['momentum']} eps={defaults['eps']} centered={defaults['centered']}")
    tensors = {}
    # book:begin steps
    for step in range(1, STEPS + 1):
        optimizer.zero_grad()
        loss = (g * w).sum()
        loss.backward()
        optimizer.step()
        print(f"step {step} w {w.tolist()}")
        tensors[f"w.step{step}"] = w.detach().clone()
    # book:end
    out = args.out / f"torch-{args.variant}.safetensors"
    write_torch_dump(out, tensors, experiment="p23", variant=args.variant, input_sha256=input_sha256,
                     alpha=defaults["alpha"], momentum=defaults["momentum"], epsilon=defaults["eps"], lr=LR, steps=STEPS)


if __name__ == "__main__":
    main()
