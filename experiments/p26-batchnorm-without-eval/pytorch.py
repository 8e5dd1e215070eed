"""p26, PyTorch side: two evaluation batches through a fresh BatchNorm1d, after `model.eval()`
and in training mode (under `torch.no_grad()` only)."""

import torch

from pita.torch_dump import write_torch_dump
from pita_lab.args import experiment_args
from pita_lab.inputs import inputs_sha256, ramp

# book:begin setup
BATCH, FEATURES = 4, 2
CALLS = 2  # two validation batches
# book:end


def main():
    args = experiment_args(("eval", "train"))
    # book:begin inputs
    inputs = ramp(8)  # 0.1·k − 0.5, k = 0..7, as [4, 2]
    # book:end
    input_sha256 = inputs_sha256(inputs)
    x = torch.from_numpy(inputs).reshape(BATCH, FEATURES)
    norm = torch.nn.BatchNorm1d(FEATURES)  # running_mean 0, running_var 1, momentum 0.1

    if args.variant == "eval":
        # book:begin eval
        norm.eval()
        # book:end
    with torch.no_grad():
        for call in range(1, CALLS + 1):
            # book:begin forward
            out = norm(x)
            # book:end
            print(f"call {call}: running_mean {norm.running_mean.tolist()} running_var {norm.running_var.tolist()}")
    print("training", norm.training)
    print("out", out.reshape(-1).tolist())
    tensors = {"out": out, "running_mean": norm.running_mean, "running_var": norm.running_var}
    out_path = args.out / f"torch-{args.variant}.safetensors"
    write_torch_dump(out_path, tensors, experiment="p26", variant=args.variant, input_sha256=input_sha256,
                     batch_size=BATCH, momentum=norm.momentum, calls=CALLS)


if __name__ == "__main__":
    main()
