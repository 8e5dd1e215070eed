"""p29d, PyTorch side: one epoch through a DataLoader, `drop_last=True` (variant `ref`) or
PyTorch's default `drop_last=False` (variant `keep`). BatchNorm in training mode, a Linear, the
mean squared error of each batch; no optimizer step, so `.grad` sums the epoch's gradients."""

import numpy as np
import torch
from torch.utils.data import DataLoader, TensorDataset

from pita.torch_dump import write_torch_dump
from pita_lab.args import experiment_args
from pita_lab.inputs import inputs_sha256, ramp

# book:begin setup
N, BATCH, FEATURES = 10, 4, 2  # samples, batch size, features
WEIGHT = [0.05, -0.025]  # Linear(2, 1)
BIAS = 0.01
TARGET = 0.0  # every sample's target
# book:end


def make_loader(dataset: TensorDataset, variant: str) -> DataLoader:
    if variant == "ref":
        # book:begin ref
        loader = DataLoader(dataset, batch_size=BATCH, shuffle=False, drop_last=True)
        # book:end
        return loader
    # book:begin keep
    loader = DataLoader(dataset, batch_size=BATCH, shuffle=False)  # drop_last=False, the default
    # book:end
    return loader


def main():
    args = experiment_args(("ref", "keep"))
    x_values, y_values = ramp(N * FEATURES), np.full(N, TARGET, dtype=np.float32)
    input_sha256 = inputs_sha256(x_values, y_values, WEIGHT, [BIAS])
    x = torch.from_numpy(x_values).reshape(N, FEATURES)
    y = torch.from_numpy(y_values).reshape(N, 1)
    dataset = TensorDataset(torch.arange(N), x, y)
    loader = make_loader(dataset, args.variant)

    norm = torch.nn.BatchNorm1d(FEATURES)  # momentum 0.1, eps 1e-5
    fc = torch.nn.Linear(FEATURES, 1)
    with torch.no_grad():
        fc.weight.copy_(torch.tensor([WEIGHT]))
        fc.bias.copy_(torch.tensor([BIAS]))
    sample_weight = torch.zeros(N)  # each sample's weight in the epoch's summed gradient
    batch_sizes = []
    # book:begin epoch
    norm.train()
    for index, xb, yb in loader:
        loss = ((fc(norm(xb)) - yb) ** 2).mean()
        loss.backward()  # no optimizer step here: .grad sums the epoch's gradients
        # book:end
        sample_weight[index] += 1 / len(index)
        batch_sizes.append(len(index))

    print(f"batches from the loader: {batch_sizes}; len(loader) = {len(loader)}")
    print("sample weight", sample_weight.tolist())
    print("running_mean", norm.running_mean.tolist())
    print("running_var ", norm.running_var.tolist())
    print("fc.weight.grad", fc.weight.grad.reshape(-1).tolist())
    print("fc.bias.grad  ", fc.bias.grad.tolist())
    tensors = {"x": x, "sample_weight": sample_weight, "running_mean": norm.running_mean, "running_var": norm.running_var,
               "fc.weight.grad": fc.weight.grad, "fc.bias.grad": fc.bias.grad}
    sizes = ",".join(str(size) for size in batch_sizes)
    write_torch_dump(args.out / f"torch-{args.variant}.safetensors", tensors, experiment="p29d", variant=args.variant,
                     input_sha256=input_sha256, n_samples=N, batch_size=BATCH, momentum=norm.momentum,
                     drop_last=loader.drop_last, loader_batch_sizes=sizes, trained_batch_sizes=sizes)


if __name__ == "__main__":
    main()
