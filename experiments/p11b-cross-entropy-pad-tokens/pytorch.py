"""p11b, PyTorch side: cross_entropy with ignore_index, plain, with class weights and with label smoothing."""

import torch

from pita.torch_dump import write_torch_dump
from pita_lab.args import experiment_args
from pita_lab.inputs import inputs_sha256, ramp

# book:begin setup
BATCH, CLASSES = 4, 3
TARGETS = [1, 2, 0, 0]  # class 0 is the padding class: the last two rows are padding
PAD = 0
WEIGHTS = [1.0, 2.0, 3.0]
SMOOTHING = 0.1
# book:end


def main():
    args = experiment_args(("ref",))
    logits_values = ramp(BATCH * CLASSES)
    input_sha256 = inputs_sha256(logits_values, TARGETS, WEIGHTS, [SMOOTHING])
    targets = torch.tensor(TARGETS)
    weights = torch.tensor(WEIGHTS)
    tensors = {}
    for name in ("plain", "weighted", "smoothed"):
        logits = torch.from_numpy(logits_values).reshape(BATCH, CLASSES).requires_grad_()
        if name == "plain":
            # book:begin plain
            loss = torch.nn.functional.cross_entropy(logits, targets, ignore_index=PAD)
            # book:end
        elif name == "weighted":
            # book:begin weighted
            loss = torch.nn.functional.cross_entropy(logits, targets, weight=weights, ignore_index=PAD)
            # book:end
        else:
            # book:begin smoothed
            loss = torch.nn.functional.cross_entropy(logits, targets, ignore_index=PAD, label_smoothing=SMOOTHING)
            # book:end
        loss.backward()
        print(f"{name} loss {loss.item()}")
        print(f"{name} logits.grad {logits.grad.reshape(-1).tolist()}")
        tensors[f"{name}.loss"] = loss.reshape(1)
        tensors[f"{name}.logits.grad"] = logits.grad
    out = args.out / f"torch-{args.variant}.safetensors"
    write_torch_dump(out, tensors, experiment="p11b", variant=args.variant, input_sha256=input_sha256, batch_size=BATCH)


if __name__ == "__main__":
    main()
