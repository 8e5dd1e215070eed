"""p29c, PyTorch side: BatchNorm1d(momentum=None) over STEPS training batches keeps a cumulative
moving average: after t batches the running statistics are the plain mean of the t batch
statistics (factor 1/t). Variant `ref`; `ema` is the default momentum 0.1."""

import numpy as np
import torch

from pita.torch_dump import write_torch_dump
from pita_lab.args import experiment_args
from pita_lab.inputs import inputs_sha256, ramp

# book:begin setup
BATCH, FEATURES = 4, 2
STEPS = 5  # training batches
SCALE = 0.5  # batch t is ramp(8, 8t)·SCALE^t: each batch its own mean and variance
# book:end


def main():
    args = experiment_args(("ref", "ema"))
    # book:begin inputs
    inputs = [ramp(8, 8 * t) * np.float32(SCALE**t) for t in range(STEPS)]  # exact: SCALE^t is a power of two
    # book:end
    input_sha256 = inputs_sha256(*inputs)
    batches = [torch.from_numpy(values).reshape(BATCH, FEATURES) for values in inputs]
    if args.variant == "ref":
        # book:begin norm
        norm = torch.nn.BatchNorm1d(FEATURES, momentum=None)  # cumulative moving average
        # book:end
    else:
        norm = torch.nn.BatchNorm1d(FEATURES)  # the default, momentum=0.1
    # book:begin train
    norm.train()
    for x in batches:
        norm(x)  # a training step's forward: updates running_mean and running_var
    # book:end
    # book:begin eval
    norm.eval()
    with torch.no_grad():
        out = norm(batches[-1])  # the last training batch
    # book:end
    batch_mean = torch.stack([x.mean(0) for x in batches])
    batch_var = torch.stack([x.var(0, unbiased=True) for x in batches])
    print("momentum", norm.momentum, "num_batches_tracked", int(norm.num_batches_tracked))
    print("batch means          ", batch_mean[:, 0].tolist())
    print("batch variances (n-1)", batch_var[:, 0].tolist())
    print("running_mean", norm.running_mean.tolist())
    print("running_var ", norm.running_var.tolist())
    print("eval out", out.reshape(-1).tolist())
    tensors = {"batch_mean": batch_mean, "batch_var": batch_var, "running_mean": norm.running_mean,
               "running_var": norm.running_var, "out.eval": out}
    out_path = args.out / f"torch-{args.variant}.safetensors"
    write_torch_dump(out_path, tensors, experiment="p29c", variant=args.variant, input_sha256=input_sha256,
                     batch_size=BATCH, momentum=norm.momentum, steps=int(norm.num_batches_tracked))


if __name__ == "__main__":
    main()
