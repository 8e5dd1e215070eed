"""p02, PyTorch side: the mean of an integer tensor (an accuracy from a comparison mask), and a
product of integers past 2^31. PyTorch refuses the integer mean and computes in int64."""

import torch

from pita.torch_dump import write_torch_dump
from pita_lab.args import experiment_args
from pita_lab.inputs import inputs_sha256

# book:begin setup
PRED = [1, 0, 2, 1, 1]  # predicted classes
LABELS = [1, 1, 2, 0, 1]  # true classes
X = [3, 50000]
Y = [7, 50000]
# book:end


def main():
    args = experiment_args(("intmean", "ref"))
    input_sha256 = inputs_sha256(PRED, LABELS, X, Y)
    pred, labels = torch.tensor(PRED), torch.tensor(LABELS)
    x, y = torch.tensor(X), torch.tensor(Y)
    print(f"{args.variant} int dtype {x.dtype}")
    if args.variant == "intmean":
        # book:begin intmean
        accuracy = (pred == labels).int().mean()
        # book:end
    else:
        # book:begin ref
        accuracy = (pred == labels).float().mean()
        product = x * y
        # book:end
        print(f"{args.variant} accuracy {accuracy.item()}")
        print(f"{args.variant} product {product.tolist()} ({product.dtype})")
        tensors = {"accuracy": accuracy.reshape(1), "product": product.float()}
        out = args.out / f"torch-{args.variant}.safetensors"
        write_torch_dump(out, tensors, experiment="p02", variant=args.variant, input_sha256=input_sha256)


if __name__ == "__main__":
    main()
