"""p25, PyTorch side: an evaluation pass through Linear + Dropout, after `model.eval()` and with
`torch.no_grad()` alone."""

import torch

from pita.torch_dump import write_torch_dump
from pita_lab.args import experiment_args
from pita_lab.inputs import inputs_sha256, ramp

# book:begin setup
P = 0.5  # dropout probability
SEED = 0
# book:end


# book:begin model
class Net(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = torch.nn.Linear(4, 4)
        self.drop = torch.nn.Dropout(P)

    def forward(self, x):
        return self.drop(self.fc(x))
# book:end


def main():
    args = experiment_args(("eval", "nograd"))
    torch.manual_seed(SEED)
    # book:begin inputs
    inputs = ramp(8)  # 0.1·k − 0.5, k = 0..7: the batch, [2, 4]
    weight = ramp(16, 8)  # fc.weight in PyTorch's [out, in] layout
    bias = ramp(4, 24)
    # book:end
    input_sha256 = inputs_sha256(inputs, weight, bias)
    model = Net()
    with torch.no_grad():
        model.fc.weight.copy_(torch.from_numpy(weight).reshape(4, 4))
        model.fc.bias.copy_(torch.from_numpy(bias))
    x = torch.from_numpy(inputs).reshape(2, 4)

    if args.variant == "eval":
        # book:begin eval
        model.eval()
        with torch.no_grad():
            out = model(x)
        # book:end
    else:
        # book:begin nograd
        with torch.no_grad():  # still in training mode: no_grad does not switch dropout off
            out = model(x)
        # book:end
    print("training", model.training)
    print("out", out.reshape(-1).tolist())
    print("zeros", int((out == 0).sum()), "of", out.numel())
    out_path = args.out / f"torch-{args.variant}.safetensors"
    write_torch_dump(out_path, {"out": out}, experiment="p25", variant=args.variant, input_sha256=input_sha256, dropout=P)


if __name__ == "__main__":
    main()
