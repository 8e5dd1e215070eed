"""p06, PyTorch side: `chunk(4)` of 9 and of 5 elements. PyTorch uses chunks of ceil(size/4) and
returns fewer than 4 chunks when that covers the tensor: 9 gives [3, 3, 3], 5 gives [2, 2, 1]."""

import torch

from pita.torch_dump import write_torch_dump
from pita_lab.args import experiment_args
from pita_lab.inputs import inputs_sha256, ramp

# book:begin setup
CHUNKS = 4
# book:end


def main():
    args = experiment_args(("ref",))
    # book:begin inputs
    x_values, y_values = ramp(9), ramp(5, 9)  # 9 and 5 elements: neither a multiple of 4
    # book:end
    input_sha256 = inputs_sha256(x_values, y_values)
    x, y = torch.from_numpy(x_values), torch.from_numpy(y_values)
    # book:begin ref
    x_chunks = x.chunk(CHUNKS)
    y_chunks = y.chunk(CHUNKS)
    # book:end
    tensors = {}
    for name, chunks in (("x", x_chunks), ("y", y_chunks)):
        print(f"{name}: {len(chunks)} chunks of sizes {[len(c) for c in chunks]}")
        tensors.update({f"{name}.{i}": c for i, c in enumerate(chunks)})
    path = args.out / f"torch-{args.variant}.safetensors"
    write_torch_dump(path, tensors, experiment="p06", variant=args.variant, input_sha256=input_sha256, chunks=CHUNKS)


if __name__ == "__main__":
    main()
