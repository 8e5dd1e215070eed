"""p11g, PyTorch side: BCELoss with labels still in {-1, 1} and GaussianNLLLoss with a variance
head that goes negative. PyTorch checks both inputs and raises; the reference maps the labels to
{0, 1} and the variance through softplus."""

import torch
import torch.nn.functional as F

from pita.torch_dump import write_torch_dump
from pita_lab.args import experiment_args
from pita_lab.inputs import inputs_sha256, ramp

# book:begin setup
PROBS = ramp(6, 6)                      # 0.1 … 0.6: a sigmoid's output
LABELS = [1., -1., -1., 1., 1., -1.]   # attributes stored as ±1 (CelebA style), not mapped to {0, 1}
MEAN = ramp(6, 0)                       # -0.5 … 0.0: the predicted mean
TARGET = ramp(6, 3)                     # -0.2 … 0.3
RAW_VAR = ramp(6, 2)                    # -0.3 … 0.2: a variance head without softplus
# book:end
VARIANTS = ("ref", "direct-bce", "direct-bce-logits", "direct-gnll")


def main():
    args = experiment_args(VARIANTS)
    input_sha256 = inputs_sha256(PROBS, LABELS, MEAN, TARGET, RAW_VAR)
    probs = torch.from_numpy(PROBS).requires_grad_()
    labels = torch.tensor(LABELS)
    mean = torch.from_numpy(MEAN).requires_grad_()
    target, raw_var = torch.from_numpy(TARGET), torch.from_numpy(RAW_VAR)
    tensors = {}
    if args.variant in ("ref", "direct-bce", "direct-bce-logits"):
        if args.variant == "direct-bce":
            # book:begin direct_bce
            bce_target = labels
            loss = F.binary_cross_entropy(probs, bce_target)  # nn.BCELoss()
            # book:end
        elif args.variant == "direct-bce-logits":
            # book:begin direct_bce_logits
            bce_target = labels
            loss = F.binary_cross_entropy_with_logits(probs, bce_target)  # nn.BCEWithLogitsLoss(): no range check
            # book:end
        else:
            # book:begin ref_bce
            bce_target = (labels + 1) / 2  # {-1, 1} -> {0, 1}
            loss = F.binary_cross_entropy(probs, bce_target)
            # book:end
        loss.backward()
        print("bce target", bce_target.tolist())
        print("bce loss", loss.item())
        tensors |= {"bce.target": bce_target, "bce.loss": loss.reshape(1), "bce.probs.grad": probs.grad}
    if args.variant in ("ref", "direct-gnll"):
        if args.variant == "direct-gnll":
            # book:begin direct_gnll
            var = raw_var
            loss = F.gaussian_nll_loss(mean, target, var)  # nn.GaussianNLLLoss(), eps 1e-6
            # book:end
        else:
            # book:begin ref_gnll
            var = F.softplus(raw_var)
            loss = F.gaussian_nll_loss(mean, target, var)
            # book:end
        loss.backward()
        print("gnll var", var.tolist())
        print("gnll loss", loss.item())
        print("gnll mean.grad", mean.grad.tolist())
        tensors |= {"gnll.mean": mean.detach(), "gnll.target": target, "gnll.var": var, "gnll.loss": loss.reshape(1)}
    write_torch_dump(args.out / f"torch-{args.variant}.safetensors", tensors,
                     experiment="p11g", variant=args.variant, input_sha256=input_sha256,
                     gnll_eps=torch.nn.GaussianNLLLoss().eps)


if __name__ == "__main__":
    main()
