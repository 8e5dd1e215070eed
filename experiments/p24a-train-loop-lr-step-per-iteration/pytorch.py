"""p24a, PyTorch side: a training loop whose StepLR is stepped once per epoch, as the recipe says."""

import torch
import torch.nn.functional as F

from pita.torch_dump import write_torch_dump
from pita_lab.args import experiment_args
from pita_lab.inputs import inputs_sha256, ramp

# book:begin setup
SAMPLES = 8
BATCH = 2  # SAMPLES // BATCH = 4 iterations per epoch
EPOCHS = 4
LR = 0.1
STEP_EPOCHS = 2  # StepLR(step_size=2), stepped once per epoch
GAMMA = 0.5
ACCUM = 2  # the `epoch-accum` variant: micro-batches per optimizer step
WEIGHT = [0.5, -0.25, 0.75]
BIAS = [0.1]
TARGETS = [1.0, 0.0, -1.0, 2.0, 0.5, -0.5, 1.5, -1.0]
# book:end


def main():
    args = experiment_args(("epoch", "epoch-accum"))
    inputs = ramp(3 * SAMPLES)
    input_sha256 = inputs_sha256(inputs, TARGETS, WEIGHT, BIAS)
    model = torch.nn.Linear(3, 1)
    with torch.no_grad():
        model.weight.copy_(torch.tensor([WEIGHT]))
        model.bias.copy_(torch.tensor(BIAS))
    x = torch.from_numpy(inputs).reshape(SAMPLES, 3)
    y = torch.tensor(TARGETS).reshape(SAMPLES, 1)
    batches = list(zip(x.split(BATCH), y.split(BATCH)))
    accum = ACCUM if args.variant == "epoch-accum" else 1
    # book:begin loop
    opt = torch.optim.SGD(model.parameters(), lr=LR)
    scheduler = torch.optim.lr_scheduler.StepLR(opt, step_size=STEP_EPOCHS, gamma=GAMMA)
    lrs = []
    for _epoch in range(EPOCHS):
        for i, (xb, yb) in enumerate(batches):
            loss = F.mse_loss(model(xb), yb) / accum
            loss.backward()
            if (i + 1) % accum == 0:  # accum = 1: every batch
                lrs.append(opt.param_groups[0]["lr"])  # the lr this step trains with
                opt.step()
                opt.zero_grad()
        scheduler.step()  # once per epoch
    # book:end
    print(f"StepLR(step_size={scheduler.step_size}, gamma={scheduler.gamma}), stepped once per epoch")
    print(f"{len(batches)} iterations per epoch, {EPOCHS} epochs, accumulation {accum}")
    micro_batches = EPOCHS * len(batches)
    scheduler_steps = scheduler.last_epoch  # counts scheduler.step() calls
    print(f"micro-batches {micro_batches}, scheduler steps {scheduler_steps}, optimizer steps {len(lrs)}")
    print("lr per optimizer step", lrs)
    print("weight after training", model.weight.detach().reshape(-1).tolist(), "bias", model.bias.detach().tolist())
    tensors = {"lr": torch.tensor(lrs, dtype=torch.float32), "weight.final": model.weight, "bias.final": model.bias}
    out = args.out / f"torch-{args.variant}.safetensors"
    write_torch_dump(out, tensors, experiment="p24a", variant=args.variant, input_sha256=input_sha256,
                     samples=SAMPLES, epochs=EPOCHS, batch_size=BATCH, iterations_per_epoch=len(batches), accumulation=accum,
                     micro_batches=micro_batches, scheduler_steps=scheduler_steps, optimizer_steps=len(lrs))


if __name__ == "__main__":
    main()
