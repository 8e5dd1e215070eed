"""p11e, PyTorch side: BCEWithLogitsLoss with soft targets (label smoothing, a teacher's probabilities)."""

import torch
import torch.nn.functional as F

from pita.torch_dump import write_torch_dump
from pita_lab.args import experiment_args
from pita_lab.inputs import inputs_sha256, ramp

# book:begin setup
LOGITS = ramp(6, 3)  # -0.2 … 0.3
SMOOTH = [0.1, 0.9, 0.9, 0.1, 0.9, 0.1]      # labels [0, 1, 1, 0, 1, 0], smoothed to 0.1 / 0.9
TEACHER = [0.2, 0.7, 0.55, 0.05, 0.95, 0.4]  # a teacher's probabilities (distillation)
# book:end


def main():
    args = experiment_args(("ref",))
    input_sha256 = inputs_sha256(LOGITS, SMOOTH, TEACHER)
    tensors = {}
    for case, values in (("smooth", SMOOTH), ("distill", TEACHER)):
        logits = torch.from_numpy(LOGITS).requires_grad_()
        targets = torch.tensor(values)
        # book:begin ref
        loss = F.binary_cross_entropy_with_logits(logits, targets)  # the same as nn.BCEWithLogitsLoss()
        # book:end
        loss.backward()
        print(f"{case} targets {targets.tolist()}")
        print(f"{case} loss {loss.item()}")
        print(f"{case} logits.grad {logits.grad.tolist()}")
        tensors |= {f"{case}.target": targets, f"{case}.loss": loss.reshape(1), f"{case}.logits.grad": logits.grad}
    write_torch_dump(args.out / f"torch-{args.variant}.safetensors", tensors,
                     experiment="p11e", variant=args.variant, input_sha256=input_sha256)


if __name__ == "__main__":
    main()
