"""p11f, PyTorch side: CrossEntropyLoss with class probabilities as the target (mixup, label smoothing)."""

import torch
import torch.nn.functional as F

from pita.torch_dump import write_torch_dump
from pita_lab.args import experiment_args
from pita_lab.inputs import inputs_sha256, ramp

# book:begin setup
B, C = 4, 3
LOGITS = ramp(B * C).reshape(B, C)  # -0.5 … 0.6
TARGET = [[0.7, 0.3, 0.0],   # mixup: 0.7 · class 0 + 0.3 · class 1
          [0.0, 0.7, 0.3],
          [0.3, 0.0, 0.7],
          [0.1, 0.1, 0.8]]   # class 2, smoothed
# book:end


def main():
    args = experiment_args(("ref",))
    input_sha256 = inputs_sha256(LOGITS, TARGET)
    logits = torch.from_numpy(LOGITS).requires_grad_()
    target = torch.tensor(TARGET)
    # book:begin ref
    loss = F.cross_entropy(logits, target)  # nn.CrossEntropyLoss()(logits, target): float target = probabilities
    # book:end
    loss.backward()
    print("target", target.tolist())
    print("loss", loss.item())
    print("logits.grad", logits.grad.tolist())
    write_torch_dump(args.out / f"torch-{args.variant}.safetensors",
                     {"target": target, "loss": loss.reshape(1), "logits.grad": logits.grad},
                     experiment="p11f", variant=args.variant, input_sha256=input_sha256, batch_size=B)


if __name__ == "__main__":
    main()
