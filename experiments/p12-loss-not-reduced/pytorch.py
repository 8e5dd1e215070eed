"""p12, PyTorch side: backward() on a per-sample (non-scalar) loss, and on its mean."""

import torch

from pita.torch_dump import write_torch_dump
from pita_lab.args import experiment_args
from pita_lab.inputs import inputs_sha256, ramp

# book:begin setup
BATCH = 4
WEIGHT = [0.5, -0.25, 0.75]
BIAS = [0.1]
TARGETS = [1.0, 0.0, -1.0, 2.0]
# book:end


def main():
    args = experiment_args(("nonscalar", "mean"))
    # book:begin inputs
    inputs = ramp(12)  # 0.1·k − 0.5 for k = 0..11, in float64, rounded to float32
    # book:end
    input_sha256 = inputs_sha256(inputs, TARGETS, WEIGHT, BIAS)
    fc = torch.nn.Linear(3, 1)
    with torch.no_grad():
        fc.weight.copy_(torch.tensor([WEIGHT]))
        fc.bias.copy_(torch.tensor(BIAS))
    x = torch.from_numpy(inputs).reshape(BATCH, 3)
    y = torch.tensor(TARGETS).reshape(BATCH, 1)

    # book:begin per_sample
    per_sample = (fc(x) - y) ** 2  # [4, 1], forgot .mean()
    # book:end
    if args.variant == "nonscalar":
        # book:begin nonscalar
        per_sample.backward()
        # book:end
    else:
        # book:begin mean
        loss = per_sample.mean()
        loss.backward()
        # book:end
        print("mean loss", loss.item())
    print("weight.grad", fc.weight.grad.reshape(-1).tolist())
    print("bias.grad", fc.bias.grad.tolist())
    tensors = {"weight.grad": fc.weight.grad, "bias.grad": fc.bias.grad}
    out = args.out / f"torch-{args.variant}.safetensors"
    write_torch_dump(out, tensors, experiment="p12", variant=args.variant, input_sha256=input_sha256, batch_size=BATCH)


if __name__ == "__main__":
    main()
