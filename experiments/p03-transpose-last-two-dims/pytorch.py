"""p03, PyTorch side: `.T` on a 3-D tensor reverses every dimension (deprecated, with a warning);
`.mT` swaps the last two."""

import torch

from pita.torch_dump import write_torch_dump
from pita_lab.args import experiment_args
from pita_lab.inputs import inputs_sha256, ramp


def main():
    args = experiment_args(("T", "mT"))
    # book:begin inputs
    inputs = ramp(8)  # 0.1·k − 0.5 for k = 0..7
    x = torch.from_numpy(inputs).reshape(2, 2, 2)  # every dim the same size: shapes cannot tell
    # book:end
    input_sha256 = inputs_sha256(inputs)
    wide = torch.zeros(2, 3, 4)
    if args.variant == "T":
        # book:begin T
        out = x.T
        # book:end
        print(f"T of [2, 3, 4] has shape {list(wide.T.shape)}")
    else:
        # book:begin mT
        out = x.mT
        # book:end
        print(f"mT of [2, 3, 4] has shape {list(wide.mT.shape)}")
    print(f"{args.variant} out [{', '.join(str(v) for v in out.contiguous().reshape(-1).numpy())}]")
    out_path = args.out / f"torch-{args.variant}.safetensors"
    write_torch_dump(out_path, {"out": out}, experiment="p03", variant=args.variant, input_sha256=input_sha256)


if __name__ == "__main__":
    main()
