"""p02a, PyTorch side: `F.one_hot` raises on a negative label and on one >= num_classes, so a
program with ignored labels (-1, or the -100 of `ignore_index`) clamps and masks them itself."""

import numpy as np
import torch
import torch.nn.functional as F

from pita.torch_dump import write_torch_dump
from pita_lab.args import experiment_args
from pita_lab.inputs import inputs_sha256, ramp

# book:begin setup
NUM_CLASSES = 4
LABELS = {"ignore-1": [2, 0, -1, 1, 3, -1], "ignore-100": [2, 0, -100, 1, 3, -100], "too-large": [2, 0, 4, 1, 3, 4]}
LOGITS = ramp(24).reshape(6, NUM_CLASSES)  # 0.1·k − 0.5, six samples of four classes
# book:end


def main():
    args = experiment_args(("ref", "direct", "direct-100", "direct-too-large"))
    labels_name = {"direct-100": "ignore-100", "direct-too-large": "too-large"}.get(args.variant, "ignore-1")
    labels = torch.tensor(LABELS[labels_name])
    logits = torch.tensor(LOGITS)
    input_sha256 = inputs_sha256(np.array(LABELS[labels_name], dtype=np.float32), LOGITS)
    if args.variant == "ref":
        # book:begin ref
        valid = labels >= 0
        target = F.one_hot(labels.clamp(min=0), NUM_CLASSES) * valid.unsqueeze(1)
        # book:end
    else:
        # book:begin direct
        target = F.one_hot(labels, NUM_CLASSES)
        # book:end
    target = target.float()
    # book:begin loss
    loss = -(target * F.log_softmax(logits, dim=1)).sum() / target.sum()
    # book:end
    print(f"labels {labels.tolist()}")
    print(f"target rows {target.int().tolist()}")
    print(f"loss {loss.item():.9g}")
    write_torch_dump(args.out / f"torch-{args.variant}.safetensors", {"labels": labels.float(), "target": target, "loss": loss.reshape(1)},
                     experiment="p02a", variant=args.variant, input_sha256=input_sha256)


if __name__ == "__main__":
    main()
