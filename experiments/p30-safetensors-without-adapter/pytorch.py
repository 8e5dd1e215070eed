"""p30, PyTorch side: a Linear layer's state_dict written with safetensors (the file burn loads),
and the layer's output on a fixed input."""

import torch
from safetensors.torch import save_file

from pita.torch_dump import write_torch_dump
from pita_lab.args import experiment_args
from pita_lab.inputs import inputs_sha256, ramp


def main():
    args = experiment_args(("ref",))
    # book:begin inputs
    weight = ramp(9).reshape(3, 3)  # [out, in]
    bias = ramp(3, 9)
    x = ramp(6, 12).reshape(2, 3)
    weight_3x2 = ramp(6, 18).reshape(2, 3)  # a non-square layer: Linear(3, 2)
    bias_3x2 = ramp(2, 24)
    # book:end
    input_sha256 = inputs_sha256(weight, bias, x, weight_3x2, bias_3x2)
    fc = torch.nn.Linear(3, 3)
    fc_3x2 = torch.nn.Linear(3, 2)
    with torch.no_grad():
        fc.weight.copy_(torch.from_numpy(weight))
        fc.bias.copy_(torch.from_numpy(bias))
        fc_3x2.weight.copy_(torch.from_numpy(weight_3x2))
        fc_3x2.bias.copy_(torch.from_numpy(bias_3x2))
    args.out.mkdir(parents=True, exist_ok=True)
    # book:begin save
    save_file(fc.state_dict(), args.out / "linear3x3.safetensors")
    save_file(fc_3x2.state_dict(), args.out / "linear3x2.safetensors")
    # book:end
    # book:begin forward
    y = fc(torch.from_numpy(x))
    # book:end
    print("state_dict", {k: list(v.shape) for k, v in fc.state_dict().items()})
    print("fc.weight [out, in]", fc.weight.tolist())
    print("y", y.tolist())
    tensors = {"x": torch.from_numpy(x), "fc.weight": fc.weight, "fc.bias": fc.bias, "y": y}
    out = args.out / f"torch-{args.variant}.safetensors"
    write_torch_dump(out, tensors, experiment="p30", variant=args.variant, input_sha256=input_sha256)


if __name__ == "__main__":
    main()
