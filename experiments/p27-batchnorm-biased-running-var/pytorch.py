"""p27, PyTorch side: a training-mode forward through BatchNorm1d updates running_var with the
unbiased batch variance; then an eval forward uses it. Variant `ref` takes one step, `long`
STEPS steps on the same batch, after which running_var has forgotten its start."""

import torch

from pita.torch_dump import write_torch_dump
from pita_lab.args import experiment_args
from pita_lab.inputs import inputs_sha256, ramp

# book:begin setup
BATCH, FEATURES = 4, 2
# book:end
# book:begin steps
STEPS = 200  # training steps of the long run, each on the same batch
# book:end


def main():
    args = experiment_args(("ref", "long"))
    # book:begin inputs
    inputs = ramp(8)  # 0.1·k − 0.5, k = 0..7, as [4, 2]
    # book:end
    input_sha256 = inputs_sha256(inputs)
    x = torch.from_numpy(inputs).reshape(BATCH, FEATURES)
    norm = torch.nn.BatchNorm1d(FEATURES)  # momentum 0.1, eps 1e-5
    before = norm.running_var.clone()

    steps = STEPS if args.variant == "long" else 1
    if args.variant == "long":
        # book:begin long
        norm.train()
        for _ in range(STEPS):
            norm(x)
        # book:end
        norm.eval()
    else:
        # book:begin step
        norm.train()
        norm(x)  # a training step's forward: updates running_mean and running_var
        norm.eval()
        # book:end
    # book:begin eval
    with torch.no_grad():
        out = norm(x)  # evaluation uses the running statistics
    # book:end
    print("batch variance, biased  ", x.var(0, unbiased=False).tolist())
    print("batch variance, unbiased", x.var(0, unbiased=True).tolist())
    print("running_mean", norm.running_mean.tolist())
    print("running_var ", norm.running_var.tolist())
    print("eval out", out.reshape(-1).tolist())
    tensors = {"running_var.before": before, "running_mean": norm.running_mean, "running_var": norm.running_var, "out.eval": out}
    out_path = args.out / f"torch-{args.variant}.safetensors"
    write_torch_dump(out_path, tensors, experiment="p27", variant=args.variant, input_sha256=input_sha256,
                     batch_size=BATCH, momentum=norm.momentum, steps=steps)


if __name__ == "__main__":
    main()
