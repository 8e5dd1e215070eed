"""p07, PyTorch side: a square nn.Linear, whose weight is [out_features, in_features], on a ramp."""

import torch

from pita.torch_dump import write_torch_dump
from pita_lab.args import experiment_args
from pita_lab.inputs import inputs_sha256, ramp

# book:begin setup
WEIGHT = [[1.0, 2.0], [3.0, 4.0]]  # fc.weight, [out_features, in_features]
BIAS = [0.5, -0.5]
# book:end


def main():
    args = experiment_args(("ref",))
    inputs = ramp(4)
    input_sha256 = inputs_sha256(inputs, WEIGHT, BIAS)
    x = torch.from_numpy(inputs).reshape(2, 2)
    # book:begin ref
    fc = torch.nn.Linear(2, 2)
    with torch.no_grad():
        fc.weight.copy_(torch.tensor(WEIGHT))
        fc.bias.copy_(torch.tensor(BIAS))
    out = fc(x)  # x @ fc.weight.T + fc.bias
    # book:end
    print("x", x.tolist())
    print("fc.weight", list(fc.weight.shape), fc.weight.tolist())
    print("out", out.tolist())
    tensors = {"out": out, "weight": fc.weight}
    write_torch_dump(args.out / f"torch-{args.variant}.safetensors", tensors,
                     experiment="p07", variant=args.variant, input_sha256=input_sha256)


if __name__ == "__main__":
    main()
