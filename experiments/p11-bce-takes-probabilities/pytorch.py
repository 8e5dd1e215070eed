"""p11, PyTorch side: BCEWithLogitsLoss on raw logits, and BCELoss (probabilities) on the same numbers."""

import torch

from pita.torch_dump import write_torch_dump
from pita_lab.args import experiment_args
from pita_lab.inputs import inputs_sha256, ramp

# book:begin setup
TARGETS = [0.0, 1.0, 1.0, 0.0, 1.0, 0.0]
# book:end


def main():
    args = experiment_args(("ref", "bceloss"))
    # book:begin inputs
    inside = ramp(6, 6)  # logits that happen to lie in (0, 1): 0.1 … 0.6
    mixed = ramp(6, 3)   # logits on both sides of 0: -0.2 … 0.3
    # book:end
    input_sha256 = inputs_sha256(inside, mixed, TARGETS)
    targets = torch.tensor(TARGETS)
    out = args.out / f"torch-{args.variant}.safetensors"
    tensors = {}
    for name, values in (("inside", inside), ("mixed", mixed)):
        logits = torch.from_numpy(values).requires_grad_()
        print(f"{name} logits {logits.tolist()}")
        if args.variant == "ref":
            # book:begin ref
            loss = torch.nn.BCEWithLogitsLoss()(logits, targets)
            # book:end
        else:
            # BCELoss stops on the mixed batch; the dump keeps what ran before.
            write_torch_dump(out, tensors, experiment="p11", variant=args.variant, input_sha256=input_sha256)
            # book:begin bceloss
            loss = torch.nn.BCELoss()(logits, targets)  # expects probabilities
            # book:end
        loss.backward()
        print(f"{name} loss {loss.item()}")
        print(f"{name} logits.grad {logits.grad.tolist()}")
        tensors[f"{name}.loss"] = loss.reshape(1)
        tensors[f"{name}.logits.grad"] = logits.grad
    write_torch_dump(out, tensors, experiment="p11", variant=args.variant, input_sha256=input_sha256)


if __name__ == "__main__":
    main()
