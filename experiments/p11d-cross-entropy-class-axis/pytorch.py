"""p11d, PyTorch side: F.cross_entropy on [N, C, L] logits with probability targets (class dim 1)."""

import torch

from pita.torch_dump import write_torch_dump
from pita_lab.args import experiment_args
from pita_lab.inputs import inputs_sha256, ramp

# book:begin setup
N, C, L = 2, 3, 2  # batch, classes, positions (a per-token or per-pixel head)
# Target distributions over the C classes (dim 1), one per (n, l):
# n=0: l=0 (1, 0, 0), l=1 (0.25, 0.5, 0.25); n=1: l=0 (0, 0.5, 0.5), l=1 (0, 0, 1)
TARGET = [1.0, 0.25, 0.0, 0.5, 0.0, 0.25,
          0.0, 0.0, 0.5, 0.0, 0.5, 1.0]
# book:end


def main():
    args = experiment_args(("ref",))
    logits_values = ramp(N * C * L)
    input_sha256 = inputs_sha256(logits_values, TARGET)
    logits = torch.from_numpy(logits_values).reshape(N, C, L).requires_grad_()
    target = torch.tensor(TARGET).reshape(N, C, L)
    # book:begin ref
    loss = torch.nn.functional.cross_entropy(logits, target)  # classes along dim 1
    # book:end
    loss.backward()
    print("loss", loss.item())
    print("logits.grad", logits.grad.reshape(-1).tolist())
    out = args.out / f"torch-{args.variant}.safetensors"
    write_torch_dump(out, {"loss": loss.reshape(1), "logits.grad": logits.grad}, experiment="p11d",
                     variant=args.variant, input_sha256=input_sha256, batch_size=N)


if __name__ == "__main__":
    main()
