"""p04, PyTorch side: a [B, 1] prediction against a [B] target. PyTorch's reductions (argmax)
drop the reduced dim and `unsqueeze(1)` puts the new dim where asked; `mse_loss` warns when the
shapes differ and broadcasts to [B, B]."""

import torch
import torch.nn.functional as F

from pita.torch_dump import write_torch_dump
from pita_lab.args import experiment_args
from pita_lab.inputs import inputs_sha256, ramp

# book:begin setup
BATCH = 4
LOGITS = [[0.3, 0.1, -0.2], [0.0, 0.4, 0.1], [-0.1, 0.2, 0.5], [0.2, 0.1, 0.0]]
CLASSES = [0, 1, 2, 1]
# book:end


def main():
    args = experiment_args(("ref", "broadcast"))
    # book:begin inputs
    pred_values, target_values = ramp(BATCH), ramp(BATCH, BATCH)  # k = 0..3 and k = 4..7
    # book:end
    input_sha256 = inputs_sha256(pred_values, target_values, LOGITS, CLASSES)
    pred = torch.from_numpy(pred_values).reshape(BATCH, 1)  # a regression head's output, [4, 1]
    y = torch.from_numpy(target_values)  # [4]
    logits, classes = torch.tensor(LOGITS), torch.tensor(CLASSES)
    if args.variant == "ref":
        # book:begin ref
        loss = F.mse_loss(pred, y.unsqueeze(1))  # [4, 1] against [4, 1]
        hits = logits.argmax(1) == classes  # argmax drops dim 1: [4] == [4]
        # book:end
    else:
        # book:begin broadcast
        loss = F.mse_loss(pred, y)  # [4, 1] against [4]: broadcasts to [4, 4]
        # book:end
        hits = logits.argmax(1) == classes
    accuracy = hits.float().mean()
    print(f"{args.variant} argmax(1) shape {list(logits.argmax(1).shape)}, hits shape {list(hits.shape)}")
    print(f"{args.variant} loss {loss.item():.9g}")
    print(f"{args.variant} accuracy {accuracy.item():.9g}")
    tensors = {"loss": loss.reshape(1), "accuracy": accuracy.reshape(1)}
    out = args.out / f"torch-{args.variant}.safetensors"
    write_torch_dump(out, tensors, experiment="p04", variant=args.variant, input_sha256=input_sha256, batch_size=BATCH)


if __name__ == "__main__":
    main()
