"""p29a, PyTorch side: BatchNorm1d(track_running_stats=False) keeps no running statistics, so in
eval it normalises with the batch's own mean and variance. The weight and bias are the trained
ones a port loads. Variant `ref`; `tracked` is the default (track_running_stats=True), whose eval
uses the running statistics (here still their initial values)."""

import torch

from pita.torch_dump import write_torch_dump
from pita_lab.args import experiment_args
from pita_lab.inputs import inputs_sha256, ramp

# book:begin setup
BATCH, FEATURES = 4, 2
GAMMA = [1.5, 0.5]  # the trained weight and bias: small constants, exact in binary
BETA = [0.25, -0.5]
# book:end


def main():
    args = experiment_args(("ref", "tracked"))
    # book:begin inputs
    inputs = ramp(8)  # 0.1·k − 0.5, k = 0..7, as [4, 2]
    # book:end
    input_sha256 = inputs_sha256(inputs, GAMMA, BETA)
    x = torch.from_numpy(inputs).reshape(BATCH, FEATURES)
    if args.variant == "ref":
        # book:begin norm
        norm = torch.nn.BatchNorm1d(FEATURES, track_running_stats=False)  # no running_mean, no running_var
        # book:end
    else:
        norm = torch.nn.BatchNorm1d(FEATURES)  # the default, track_running_stats=True
    with torch.no_grad():
        norm.weight.copy_(torch.tensor(GAMMA))
        norm.bias.copy_(torch.tensor(BETA))
    # book:begin eval
    norm.eval()
    with torch.no_grad():
        out = norm(x)
    # book:end
    print("track_running_stats", norm.track_running_stats)
    print("running_mean", None if norm.running_mean is None else norm.running_mean.tolist())
    print("running_var ", None if norm.running_var is None else norm.running_var.tolist())
    print("batch mean", x.mean(0).tolist(), "batch variance", x.var(0, unbiased=False).tolist())
    print("eval out", out.reshape(-1).tolist())
    out_path = args.out / f"torch-{args.variant}.safetensors"
    write_torch_dump(out_path, {"out.eval": out}, experiment="p29a", variant=args.variant, input_sha256=input_sha256,
                     batch_size=BATCH, track_running_stats=norm.track_running_stats)


if __name__ == "__main__":
    main()
