"""p29, PyTorch side: Linear + InstanceNorm1d trained for two SGD steps, with InstanceNorm1d's
default (affine=False) and with affine=True."""

import torch

from pita.torch_dump import write_torch_dump
from pita_lab.args import experiment_args
from pita_lab.inputs import inputs_sha256, ramp

# book:begin setup
CHANNELS, LENGTH = 2, 4
LR, STEPS = 0.1, 2
WEIGHT = [0.5, -0.25, 0.75, 0.0, 0.25, 1.0, -0.5, 0.5, -0.75, 0.5, 0.25, 1.0, 1.0, 0.0, -0.25, -0.5]  # [out, in]
BIAS = [0.125, -0.25, 0.375, 0.0]
# book:end


class Net(torch.nn.Module):
    def __init__(self, affine: bool):
        super().__init__()
        self.fc = torch.nn.Linear(LENGTH, LENGTH)
        # book:begin norm
        self.norm = torch.nn.InstanceNorm1d(CHANNELS, affine=affine)  # the default is affine=False
        # book:end

    def forward(self, x):
        return self.norm(self.fc(x))


def main():
    args = experiment_args(("ref", "affine"))
    # book:begin inputs
    inputs = ramp(8)  # x: [1, 2, 4]
    targets = ramp(8, 8)  # c: loss = sum(out · c)
    # book:end
    input_sha256 = inputs_sha256(inputs, targets, WEIGHT, BIAS)
    model = Net(affine=args.variant == "affine")
    with torch.no_grad():
        model.fc.weight.copy_(torch.tensor(WEIGHT).reshape(LENGTH, LENGTH))
        model.fc.bias.copy_(torch.tensor(BIAS))
    x = torch.from_numpy(inputs).reshape(1, CHANNELS, LENGTH)
    c = torch.from_numpy(targets).reshape(1, CHANNELS, LENGTH)
    norm_params = sum(p.numel() for p in model.norm.parameters())
    print("norm parameters", norm_params)

    optimizer = torch.optim.SGD(model.parameters(), lr=LR)
    out0 = model(x).detach()
    # book:begin train
    for _ in range(STEPS):
        optimizer.zero_grad()
        loss = (model(x) * c).sum()
        loss.backward()
        optimizer.step()
    # book:end
    with torch.no_grad():
        out2 = model(x)
    if args.variant == "affine":
        print("norm.weight", model.norm.weight.tolist(), "norm.bias", model.norm.bias.tolist())
    print("out.step0", [round(v, 6) for v in out0.reshape(-1).tolist()])
    print(f"out.step{STEPS}", [round(v, 6) for v in out2.reshape(-1).tolist()])
    tensors = {"out.step0": out0, f"out.step{STEPS}": out2, "fc.weight": model.fc.weight}
    out_path = args.out / f"torch-{args.variant}.safetensors"
    write_torch_dump(out_path, tensors, experiment="p29", variant=args.variant, input_sha256=input_sha256,
                     norm_params=norm_params, affine=model.norm.affine, lr=LR, steps=STEPS)


if __name__ == "__main__":
    main()
