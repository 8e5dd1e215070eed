"""Guide 「怎么读这一卷」, PyTorch side: the input ramp and its hash, PyTorch's own sum and mean
of it (`ramp`), the same float32 arithmetic in different orders (`orders`), and `pita compare`
run on dumps of different inputs (`refuse`)."""

import subprocess
import sys

import torch

from pita.torch_dump import write_torch_dump
from pita_lab.args import experiment_args
from pita_lab.inputs import inputs_sha256, ramp

N = 12  # the ramp's length
BATCH = 4  # `batch_mean` reads the ramp as 4 samples of 3 features


# book:begin orders
def sum_forward(values):
    total = torch.zeros((), dtype=values.dtype)
    for value in values:  # ((x0 + x1) + x2) + …: one rounding per addition
        total = total + value
    return total


def sum_reverse(values):
    return sum_forward(values.flip(0))


def sum_pairwise(values):  # a tree: (x0 + x1) + (x2 + x3), …
    if len(values) == 1:
        return values[0]
    half = len(values) // 2
    return sum_pairwise(values[:half]) + sum_pairwise(values[half:])


def sum_f64(values):  # exact in float64 for these values, rounded to float32 once
    return sum_forward(values.double()).float()
# book:end


# book:begin placement
def mean_sum_times_inv(values):  # sum, then × 1/B
    return sum_forward(values) * torch.tensor(1.0 / len(values), dtype=torch.float32)


def mean_each_times_inv(values):  # each term × 1/B, then sum
    return sum_forward(values * torch.tensor(1.0 / len(values), dtype=torch.float32))


def mean_sum_div(values):  # sum, then ÷ B
    return sum_forward(values) / len(values)
# book:end


def fma_operands(x):
    """a, b, c for a·b + c, taken from the ramp: b is it reversed, c it rotated by one."""
    return x, x.flip(0), x.roll(1)


# book:begin fma
def fma_fused(a, b, c):  # a·b is exact in float64, so this rounds (nearly) once: claimed equal to Rust's mul_add
    return (a.double() * b.double() + c.double()).float()


def fma_unfused(a, b, c):  # a·b rounded to float32, then + c rounded again
    return a * b + c
# book:end


def orders(x):
    tensors = {name: function(x).reshape(1) for name, function in (
        ("sum.forward", sum_forward), ("sum.reverse", sum_reverse), ("sum.pairwise", sum_pairwise), ("sum.f64", sum_f64),
        ("mean.sum_times_inv", mean_sum_times_inv), ("mean.each_times_inv", mean_each_times_inv), ("mean.sum_div", mean_sum_div))}
    tensors["mean4.sum_times_inv"] = mean_sum_times_inv(x[:4]).reshape(1)
    tensors["mean4.each_times_inv"] = mean_each_times_inv(x[:4]).reshape(1)
    tensors["fma.fused"] = fma_fused(*fma_operands(x))
    tensors["fma.unfused"] = fma_unfused(*fma_operands(x))
    return tensors


def refuse(out):
    """Writes a dump of other inputs (the ramp one step on) and runs `pita compare` on it and
    torch-ramp as a user would; exits with compare's exit code."""
    shifted = ramp(N, 1)
    write_torch_dump(out / "refused" / "torch-shifted.safetensors", {"x": torch.from_numpy(shifted)},
                     experiment="reading", variant="shifted", input_sha256=inputs_sha256(shifted), batch_size=BATCH)
    command = ["compare", "torch-ramp.safetensors", "refused/torch-shifted.safetensors"]
    print("$ pita " + " ".join(command), flush=True)
    proc = subprocess.run([sys.executable, "-m", "pita", *command], cwd=out, capture_output=True, text=True)
    sys.stdout.write(proc.stdout)
    sys.stderr.write(proc.stderr)
    sys.exit(proc.returncode)


def main():
    args = experiment_args(("ramp", "orders", "refuse"))
    # book:begin inputs
    inputs = ramp(N)  # 0.1·k − 0.5 for k = 0..11, in float64, rounded to float32
    input_sha256 = inputs_sha256(inputs)  # sha256 of the little-endian float32 bytes
    # book:end
    if args.variant == "refuse":
        (args.out / "refused").mkdir(exist_ok=True)
        refuse(args.out)
    print("input_sha256", input_sha256)
    x = torch.from_numpy(inputs)
    if args.variant == "ramp":
        # book:begin library
        tensors = {"x": x, "sum": x.sum().reshape(1), "mean": x.mean().reshape(1),
                   "batch_mean": x.reshape(BATCH, -1).mean(dim=0)}  # over the batch: one mean per feature
        # book:end
    else:
        tensors = orders(x)
    for name, tensor in tensors.items():
        print(name, tensor.tolist())
    out = args.out / f"torch-{args.variant}.safetensors"
    write_torch_dump(out, tensors, experiment="reading", variant=args.variant, input_sha256=input_sha256, batch_size=BATCH)


if __name__ == "__main__":
    main()
