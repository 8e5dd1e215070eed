"""p22, PyTorch side: SGD with momentum 0.9 (dampening 0), a few steps on a constant gradient."""

import torch

from pita.torch_dump import write_torch_dump
from pita_lab.args import experiment_args
from pita_lab.inputs import inputs_sha256

# book:begin setup
W0 = [0.0, 0.0, 0.0, 0.0]
GRAD = [1.0, -0.5, 0.25, 2.0]  # loss = Σ GRAD·w: the same gradient every step
LR = 0.1
STEPS = 3
# book:end


def main():
    args = experiment_args(("sgd",))
    input_sha256 = inputs_sha256(W0, GRAD)
    g = torch.tensor(GRAD)
    w = torch.nn.Parameter(torch.tensor(W0))
    # book:begin sgd
    optimizer = torch.optim.SGD([w], lr=LR, momentum=0.9)
    # book:end
    defaults = optimizer.defaults
    print(f"SGD momentum={defaults['momentum']} dampening={defaults['dampening']} nesterov={defaults['nesterov']}")
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
    write_torch_dump(out, tensors, experiment="p22", variant=args.variant, input_sha256=input_sha256,
                     momentum=defaults["momentum"], dampening=defaults["dampening"], lr=LR, steps=STEPS)


if __name__ == "__main__":
    main()
