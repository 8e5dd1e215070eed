"""p25a, PyTorch side: one training step through Linear + Dropout, recorded with pita.torch's
Recorder (parameters, activations, dropout masks, loss, gradients), twice with the same seed, and
once in eval mode."""

import torch

import pita.torch
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
        self.fc = torch.nn.Linear(8, 8)
        self.drop = torch.nn.Dropout(P)

    def forward(self, x):
        return self.drop(self.fc(x))
# book:end


def main():
    args = experiment_args(("seeded", "again", "eval"))
    inputs = ramp(32)  # 0.1·k − 0.5, k = 0..31: the batch, [4, 8]
    weight = ramp(64)  # fc.weight in PyTorch's [out, in] layout
    bias = ramp(8)
    input_sha256 = inputs_sha256(inputs, weight, bias)
    model = Net()
    with torch.no_grad():
        model.fc.weight.copy_(torch.from_numpy(weight).reshape(8, 8) / 8)  # /8: exact, keeps the outputs small
        model.fc.bias.copy_(torch.from_numpy(bias))
    x = torch.from_numpy(inputs).reshape(4, 8)
    if args.variant == "eval":
        # book:begin eval
        model.eval()
        with torch.no_grad(), pita.torch.Recorder(model) as recorder:
            recorder.params()
            out = model(x)
        # book:end
    else:
        # book:begin seeded
        torch.manual_seed(SEED)
        with pita.torch.Recorder(model) as recorder:  # records dropout's keep-mask as mask1/drop
            recorder.params()
            out = model(x)
            loss = out.pow(2).mean()
            recorder.loss(1, loss)
            loss.backward()
            recorder.grads()
        # book:end
    recorder.write(args.out / f"torch-{args.variant}.safetensors", experiment="p25a", variant=args.variant,
                   input_sha256=input_sha256, dropout=P)
    print("training", model.training)
    for name, mask in recorder.masks().items():
        print(name, "keeps", mask.reshape(-1).int().tolist())
    print("zeros", int((out == 0).sum()), "of", out.numel())


if __name__ == "__main__":
    main()
