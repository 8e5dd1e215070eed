"""p18, PyTorch side: gradient accumulation over micro-batches, one optimizer step."""

import torch
import torch.nn.functional as F

from pita.torch_dump import write_torch_dump
from pita_lab.args import experiment_args
from pita_lab.inputs import inputs_sha256, ramp

# book:begin setup
BATCH = 4
ACCUM = 2  # micro-batches per optimizer step, BATCH // ACCUM samples each
LR = 0.1
WEIGHT = [0.5, -0.25, 0.75]
BIAS = [0.1]
TARGETS = [1.0, 0.0, -1.0, 2.0]
# book:end


def main():
    args = experiment_args(("accumulate", "zero-each"))
    inputs = ramp(12)
    input_sha256 = inputs_sha256(inputs, TARGETS, WEIGHT, BIAS)
    model = torch.nn.Linear(3, 1)
    with torch.no_grad():
        model.weight.copy_(torch.tensor([WEIGHT]))
        model.bias.copy_(torch.tensor(BIAS))
    x = torch.from_numpy(inputs).reshape(BATCH, 3)
    y = torch.tensor(TARGETS).reshape(BATCH, 1)
    opt = torch.optim.SGD(model.parameters(), lr=LR)

    if args.variant == "accumulate":
        # book:begin accumulate
        opt.zero_grad()
        for x_mb, y_mb in zip(x.chunk(ACCUM), y.chunk(ACCUM)):
            loss = F.mse_loss(model(x_mb), y_mb) / ACCUM
            loss.backward()  # adds into .grad
        grads = (model.weight.grad.clone(), model.bias.grad.clone())
        opt.step()
        # book:end
    else:
        # book:begin zero_each
        for x_mb, y_mb in zip(x.chunk(ACCUM), y.chunk(ACCUM)):
            opt.zero_grad()  # wrong place: each micro-batch wipes the previous one
            loss = F.mse_loss(model(x_mb), y_mb) / ACCUM
            loss.backward()
        grads = (model.weight.grad.clone(), model.bias.grad.clone())
        opt.step()
        # book:end
    print("weight.grad", grads[0].reshape(-1).tolist(), "bias.grad", grads[1].tolist())
    print("weight after step", model.weight.detach().reshape(-1).tolist(), "bias", model.bias.detach().tolist())
    tensors = {"weight.grad": grads[0], "bias.grad": grads[1], "weight.step1": model.weight, "bias.step1": model.bias}
    out = args.out / f"torch-{args.variant}.safetensors"
    write_torch_dump(out, tensors, experiment="p18", variant=args.variant, input_sha256=input_sha256,
                     batch_size=BATCH, micro_batches=ACCUM)


if __name__ == "__main__":
    main()
