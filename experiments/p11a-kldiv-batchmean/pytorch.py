"""p11a, PyTorch side: KLDivLoss with its default reduction ('mean') and with 'batchmean'."""

import torch

from pita.torch_dump import write_torch_dump
from pita_lab.args import experiment_args
from pita_lab.inputs import inputs_sha256, ramp

# book:begin setup
BATCH, CLASSES = 2, 3
TARGET = [0.125, 0.375, 0.5, 0.5, 0.25, 0.25]  # each row sums to 1
# book:end


def main():
    args = experiment_args(("mean", "batchmean"))
    logits_values = ramp(BATCH * CLASSES)
    input_sha256 = inputs_sha256(logits_values, TARGET)
    logits = torch.from_numpy(logits_values).reshape(BATCH, CLASSES).requires_grad_()
    target = torch.tensor(TARGET).reshape(BATCH, CLASSES)
    log_probs = torch.log_softmax(logits, dim=1)
    if args.variant == "mean":
        # book:begin mean
        loss = torch.nn.KLDivLoss()(log_probs, target)  # reduction='mean' by default
        # book:end
    else:
        # book:begin batchmean
        loss = torch.nn.KLDivLoss(reduction="batchmean")(log_probs, target)
        # book:end
    loss.backward()
    print("loss", loss.item())
    print("logits.grad", logits.grad.reshape(-1).tolist())
    out = args.out / f"torch-{args.variant}.safetensors"
    write_torch_dump(out, {"loss": loss.reshape(1), "logits.grad": logits.grad}, experiment="p11a", variant=args.variant,
                     input_sha256=input_sha256, batch_size=BATCH, num_classes=CLASSES)


if __name__ == "__main__":
    main()
