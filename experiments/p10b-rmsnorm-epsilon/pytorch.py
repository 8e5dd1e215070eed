"""p10b, PyTorch side: nn.RMSNorm with its default eps (None: torch.finfo(dtype).eps) on small and ordinary activations."""

import torch

from pita.torch_dump import write_torch_dump
from pita_lab.args import experiment_args
from pita_lab.inputs import inputs_sha256, ramp

# book:begin setup
D_MODEL = 4
X_SMALL = [0.001, 0.002, 0.003, 0.004]  # small activations
X_NORMAL = ramp(4)  # -0.5, -0.4, -0.3, -0.2
# book:end


def main():
    args = experiment_args(("ref",))
    input_sha256 = inputs_sha256(X_SMALL, X_NORMAL)
    x_small, x_normal = torch.tensor(X_SMALL), torch.from_numpy(X_NORMAL)
    # book:begin ref
    norm = torch.nn.RMSNorm(D_MODEL)  # eps=None
    out_small, out_normal = norm(x_small), norm(x_normal)
    # book:end
    epsilon = torch.finfo(x_small.dtype).eps  # what eps=None means, per the RMSNorm docs
    print("norm.eps", norm.eps, "-> torch.finfo(float32).eps =", epsilon)
    for name, x in (("x.small", x_small), ("x.normal", x_normal)):
        print(f"mean({name}²) = {float(x.double().pow(2).mean()):.6g}")
    print("out.small ", out_small.tolist())
    print("out.normal", out_normal.tolist())
    tensors = {"x.small": x_small, "x.normal": x_normal, "out.small": out_small, "out.normal": out_normal}
    with torch.no_grad():
        write_torch_dump(args.out / f"torch-{args.variant}.safetensors", tensors, experiment="p10b",
                         variant=args.variant, input_sha256=input_sha256, epsilon=repr(epsilon))


if __name__ == "__main__":
    main()
