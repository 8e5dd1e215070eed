"""p20b, PyTorch side: Linear (with and without bias) then a batch normalisation (batch statistics,
no affine, no running stats), MSE, one AdamW step, recorded by `pita.torch.record`: `ref` and
`nobias` alone (judged by the tolerance), `budget` the same run as `ref` with its float64 run beside
it (judged by PyTorch's own float32 error)."""

import torch

import pita.torch
from pita_lab.args import experiment_args
from pita_lab.inputs import inputs_sha256, ramp

# book:begin setup
BATCH, D = 8, 4
LR = 1e-3  # AdamW's lr; eps, betas and weight_decay are PyTorch's defaults
# book:end


# book:begin model
class Net(torch.nn.Module):
    def __init__(self, bias: bool):
        super().__init__()
        self.fc = torch.nn.Linear(D, D, bias=bias)
        self.bn = torch.nn.BatchNorm1d(D, affine=False, track_running_stats=False)  # batch statistics only

    def forward(self, x):
        return self.bn(self.fc(x))  # bn subtracts each feature's batch mean: fc.bias cancels
# book:end


def pattern(n: int, salt: int) -> list[float]:
    """n exact values in [-0.5, 0.5] (multiples of 1/16), in no linear order: a ramp's batch would
    normalise to the same ramp whatever the weights."""
    return [((k * 7 + salt) % 17) * 0.0625 - 0.5 for k in range(n)]


def main():
    args = experiment_args(("ref", "budget", "nobias"))
    inputs = pattern(BATCH * D, 0)
    targets = ramp(BATCH * D)
    weight = pattern(D * D, 3)  # fc.weight, PyTorch's [out, in]
    bias = pattern(D, 5)
    input_sha256 = inputs_sha256(inputs, targets, weight, bias)
    model = Net(bias=args.variant != "nobias")
    with torch.no_grad():
        model.fc.weight.copy_(torch.tensor(weight).reshape(D, D))
        if model.fc.bias is not None:
            model.fc.bias.copy_(torch.tensor(bias))
    x = torch.tensor(inputs).reshape(BATCH, D)
    y = torch.from_numpy(targets).reshape(BATCH, D)
    float64 = args.variant == "budget"  # the float64 run beside it: the budget compare and trace judge by
    # book:begin record
    path = pita.torch.record(model, x, y, torch.nn.MSELoss(), args.out / f"torch-{args.variant}.safetensors",
                             lambda params: torch.optim.AdamW(params, lr=LR), steps=1, float64=float64,
                             experiment="p20b", variant=args.variant, input_sha256=input_sha256, lr=repr(LR))
    # book:end
    if model.fc.bias is not None:
        print("step1 fc.bias", model.fc.bias.tolist())
    print("wrote", path.name)


if __name__ == "__main__":
    main()
