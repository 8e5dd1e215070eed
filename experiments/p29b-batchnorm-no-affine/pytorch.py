"""p29b, PyTorch side: Linear + BatchNorm1d(affine=False) trained for a few SGD steps. The layer
has no parameters; variant `affine` is the default (affine=True), with a learnable weight and bias."""

import torch

from pita.torch_dump import write_torch_dump
from pita_lab.args import experiment_args
from pita_lab.inputs import inputs_sha256, ramp

# book:begin setup
BATCH, FEATURES = 4, 2
LR, STEPS = 0.1, 2
WEIGHT = [0.5, -0.25, 0.75, 1.0]  # fc: [out, in]
BIAS = [0.125, -0.25]
# book:end


class Net(torch.nn.Module):
    def __init__(self, affine: bool):
        super().__init__()
        self.fc = torch.nn.Linear(FEATURES, FEATURES)
        # book:begin norm
        self.norm = torch.nn.BatchNorm1d(FEATURES, affine=affine)  # ref: affine=False, no weight or bias
        # book:end

    def forward(self, x):
        return self.norm(self.fc(x))


def main():
    args = experiment_args(("ref", "affine"))
    # book:begin inputs
    inputs = ramp(8)  # x: [4, 2]
    targets = ramp(8, 8)  # c: loss = sum(out · c)
    # book:end
    input_sha256 = inputs_sha256(inputs, targets, WEIGHT, BIAS)
    model = Net(affine=args.variant == "affine")
    with torch.no_grad():
        model.fc.weight.copy_(torch.tensor(WEIGHT).reshape(FEATURES, FEATURES))
        model.fc.bias.copy_(torch.tensor(BIAS))
    x = torch.from_numpy(inputs).reshape(BATCH, FEATURES)
    c = torch.from_numpy(targets).reshape(BATCH, FEATURES)
    norm_params = sum(p.numel() for p in model.norm.parameters())
    # Parameters and float buffers (running_mean, running_var): what burn's num_params() counts.
    norm_state = sum(t.numel() for t in model.norm.state_dict().values() if t.is_floating_point())
    print("affine", model.norm.affine, "norm parameters", norm_params, "with running statistics", norm_state)

    optimizer = torch.optim.SGD(model.parameters(), lr=LR)
    out0 = model(x).detach()  # training mode: batch statistics
    # book:begin train
    for _ in range(STEPS):
        optimizer.zero_grad()
        loss = (model(x) * c).sum()
        loss.backward()
        optimizer.step()
    # book:end
    with torch.no_grad():
        out_k = model(x)
    if args.variant == "affine":
        print("norm.weight", model.norm.weight.tolist(), "norm.bias", model.norm.bias.tolist())
    print("out.step0", [round(v, 6) for v in out0.reshape(-1).tolist()])
    print(f"out.step{STEPS}", [round(v, 6) for v in out_k.reshape(-1).tolist()])
    tensors = {"out.step0": out0, f"out.step{STEPS}": out_k, "fc.weight": model.fc.weight}
    out_path = args.out / f"torch-{args.variant}.safetensors"
    write_torch_dump(out_path, tensors, experiment="p29b", variant=args.variant, input_sha256=input_sha256,
                     norm_params=norm_params, norm_state=norm_state, affine=model.norm.affine, lr=LR, steps=STEPS)


if __name__ == "__main__":
    main()
