"""p11c, PyTorch side: nn.SmoothL1Loss() (reduction='mean' by default) and backward."""

import torch

from pita.torch_dump import write_torch_dump
from pita_lab.args import experiment_args
from pita_lab.inputs import inputs_sha256, ramp

# book:begin setup
SHAPE = (2, 3)
TARGET = [1.0, 0.0, -1.0, 0.5, 0.0, -0.5]
# book:end


def main():
    args = experiment_args(("mean",))
    pred_values = ramp(6)
    input_sha256 = inputs_sha256(pred_values, TARGET)
    pred = torch.from_numpy(pred_values).reshape(SHAPE).requires_grad_()
    target = torch.tensor(TARGET).reshape(SHAPE)
    # book:begin mean
    loss = torch.nn.SmoothL1Loss()(pred, target)  # reduction='mean'
    loss.backward()
    # book:end
    print("loss", loss.item(), "shape", list(loss.shape))
    print("pred.grad", pred.grad.reshape(-1).tolist())
    out = args.out / f"torch-{args.variant}.safetensors"
    write_torch_dump(out, {"pred.grad": pred.grad}, experiment="p11c", variant=args.variant,
                     input_sha256=input_sha256, numel=pred.numel())


if __name__ == "__main__":
    main()
