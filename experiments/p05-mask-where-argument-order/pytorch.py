"""p05, PyTorch side: `torch.where(cond, x, y)` takes x where cond is true; `masked_fill(cond, v)`
writes v where cond is true."""

import torch

from pita.torch_dump import write_torch_dump
from pita_lab.args import experiment_args
from pita_lab.inputs import inputs_sha256, ramp

# book:begin setup
MASK = [True, False, True, False]
# book:end


def main():
    args = experiment_args(("ref", "swapped"))
    # book:begin inputs
    a_values, b_values = ramp(4), ramp(4, 4)  # k = 0..3 and k = 4..7
    # book:end
    input_sha256 = inputs_sha256(a_values, b_values, MASK)
    a, b = torch.from_numpy(a_values), torch.from_numpy(b_values)
    mask = torch.tensor(MASK)
    if args.variant == "ref":
        # book:begin ref
        out = torch.where(mask, a, b)  # a where mask is true, else b
        filled = a.masked_fill(mask, 0.0)  # 0 where mask is true
        # book:end
    else:
        # book:begin swapped
        out = torch.where(mask, b, a)
        # book:end
        filled = a.masked_fill(mask, 0.0)
    show = lambda t: "[" + ", ".join(str(v) for v in t.numpy()) + "]"
    print(f"a {show(a)}, b {show(b)}, mask {MASK}")
    print(f"{args.variant} out {show(out)}")
    print(f"{args.variant} filled {show(filled)}")
    path = args.out / f"torch-{args.variant}.safetensors"
    write_torch_dump(path, {"out": out, "filled": filled}, experiment="p05", variant=args.variant, input_sha256=input_sha256)


if __name__ == "__main__":
    main()
