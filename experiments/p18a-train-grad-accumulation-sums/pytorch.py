"""p18a, PyTorch side: gradient accumulation over micro-batches, one optimizer step; the recipe
divides each micro-batch loss by the accumulation steps (`accumulate`), or forgets to (`sum`)."""

import torch
import torch.nn.functional as F

from pita.torch_dump import write_torch_dump
from pita_lab.args import experiment_args
from pita_lab.inputs import inputs_sha256, ramp

# book:begin setup
SAMPLES = 6
BATCH = 3  # micro-batches of 3 samples
ACCUM = 2  # micro-batches per optimizer step: one step on all 6 samples
LR = 0.1
WEIGHT = [0.5, -0.25, 0.75]
BIAS = [0.1]
TARGETS = [1.0, 0.0, -1.0, 2.0, 0.5, -0.5]
# book:end


def main():
    args = experiment_args(("accumulate", "sum"))
    inputs = ramp(3 * SAMPLES)
    input_sha256 = inputs_sha256(inputs, TARGETS, WEIGHT, BIAS)
    model = torch.nn.Linear(3, 1)
    with torch.no_grad():
        model.weight.copy_(torch.tensor([WEIGHT]))
        model.bias.copy_(torch.tensor(BIAS))
    x = torch.from_numpy(inputs).reshape(SAMPLES, 3)
    y = torch.tensor(TARGETS).reshape(SAMPLES, 1)
    opt = torch.optim.SGD(model.parameters(), lr=LR)
    divisor = ACCUM if args.variant == "accumulate" else 1
    # book:begin accumulate
    opt.zero_grad()
    for i, (xb, yb) in enumerate(zip(x.split(BATCH), y.split(BATCH))):
        loss = F.mse_loss(model(xb), yb) / divisor  # the recipe: divisor = ACCUM
        loss.backward()  # adds into .grad
        if (i + 1) % ACCUM == 0:
            grads = (model.weight.grad.clone(), model.bias.grad.clone())
            opt.step()
            opt.zero_grad()
    # book:end
    print(f"micro-batches {SAMPLES // BATCH}, loss divided by {divisor}, lr {opt.param_groups[0]['lr']}")
    print("applied weight.grad", grads[0].reshape(-1).tolist(), "bias.grad", grads[1].tolist())
    print("weight after step", model.weight.detach().reshape(-1).tolist(), "bias", model.bias.detach().tolist())
    tensors = {"weight.grad": grads[0], "bias.grad": grads[1], "weight.step1": model.weight, "bias.step1": model.bias}
    out = args.out / f"torch-{args.variant}.safetensors"
    write_torch_dump(out, tensors, experiment="p18a", variant=args.variant, input_sha256=input_sha256,
                     batch_size=BATCH, accumulation=ACCUM, loss_divisor=divisor, lr=opt.param_groups[0]["lr"])


if __name__ == "__main__":
    main()
