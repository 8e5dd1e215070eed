"""The PyTorch original of the ResNet-18 port: torchvision's `resnet18(weights=None, num_classes=10)`
with random weights and the head replaced as users fine-tune it (`fc = Dropout(0.2), Linear(512,
10)`), trained two AdamW steps in training mode (dropout on, BatchNorm on batch statistics) on a
batch of four 32×32 images, and recorded with `pita.torch.record`.

    python ports/resnet18/pytorch.py --out DIR

Writes DIR/weights.safetensors (the initial state_dict, BatchNorm's buffers included),
DIR/data.safetensors (`images`, `targets`) and the recording DIR/torch-record.safetensors (with
the float64 run beside it). Everything comes from one fixed seed, so every run writes the same
bytes.
"""

import argparse
from pathlib import Path

import torch
import torchvision
from safetensors.torch import save_file
from torch import nn

import pita.torch

SEED = 0
CLASSES, BATCH, SIZE = 10, 4, 32
DROPOUT, LABEL_SMOOTHING = 0.2, 0.1
LR, STEPS = 1e-3, 2


def build():
    """The model (training mode), its batch and targets, all from SEED."""
    torch.manual_seed(SEED)
    model = torchvision.models.resnet18(weights=None, num_classes=CLASSES)
    model.fc = nn.Sequential(nn.Dropout(DROPOUT), nn.Linear(model.fc.in_features, CLASSES))  # the fine-tuning head
    model.train()
    images = torch.randn(BATCH, 3, SIZE, SIZE)
    targets = torch.randint(0, CLASSES, (BATCH,))
    return model, images, targets


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, required=True, help="folder for the weights, the data and the recording")
    args = parser.parse_args()
    args.out.mkdir(parents=True, exist_ok=True)

    model, images, targets = build()
    save_file({k: v.contiguous() for k, v in model.state_dict().items()}, args.out / "weights.safetensors")
    save_file({"images": images, "targets": targets}, args.out / "data.safetensors")

    optimizer = torch.optim.AdamW(model.parameters(), lr=LR)  # eps 1e-8, weight_decay 1e-2: PyTorch's defaults
    loss_fn = nn.CrossEntropyLoss(label_smoothing=LABEL_SMOOTHING)
    path = pita.torch.record(model, images, targets, loss_fn, args.out / "torch-record.safetensors", optimizer=optimizer, steps=STEPS,
                             experiment="port-resnet18", batch_size=BATCH)
    print(f"wrote {path}")


if __name__ == "__main__":
    main()
