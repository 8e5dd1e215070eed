"""p01, PyTorch side: integer division of negative operands. `//` floors, `/` true-divides,
`torch.div(..., rounding_mode="trunc")` truncates; `%` keeps the divisor's sign."""

import torch

from pita.torch_dump import write_torch_dump
from pita_lab.args import experiment_args
from pita_lab.inputs import inputs_sha256

# book:begin setup
A = [-7, 7, -7, 7]
B = [2, 2, -2, -2]
# book:end


def main():
    args = experiment_args(("floordiv", "truediv", "trunc"))
    input_sha256 = inputs_sha256(A, B)
    a, b = torch.tensor(A), torch.tensor(B)  # int64
    if args.variant == "floordiv":
        # book:begin floordiv
        quotient = a // b
        remainder = a % b
        # book:end
    elif args.variant == "truediv":
        # book:begin truediv
        quotient = a / b  # int / int gives float in PyTorch
        remainder = a % b
        # book:end
    else:
        # book:begin trunc
        quotient = torch.div(a, b, rounding_mode="trunc")
        remainder = a % b
        # book:end
    print(f"{args.variant} quotient dtype {quotient.dtype}")
    print(f"{args.variant} quotient {quotient.tolist()}")
    print(f"{args.variant} remainder {remainder.tolist()}")
    print(f"{args.variant} quotient*b + remainder == a: {(quotient * b + remainder == a).tolist()}")
    tensors = {"quotient": quotient.float(), "remainder": remainder.float()}
    out = args.out / f"torch-{args.variant}.safetensors"
    write_torch_dump(out, tensors, experiment="p01", variant=args.variant, input_sha256=input_sha256)


if __name__ == "__main__":
    main()
