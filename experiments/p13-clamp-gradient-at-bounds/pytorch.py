"""p13, PyTorch side: the gradient of clamp, relu6 and hardtanh at inputs lying exactly on a bound
(variant `ref`, scalar bounds), and of clamp with tensor bounds (variant `tensor-bounds`)."""

import torch
import torch.nn.functional as F

from pita.torch_dump import write_torch_dump
from pita_lab.args import experiment_args
from pita_lab.inputs import inputs_sha256

# book:begin setup
CLAMP_X = [-1.0, -0.5, 0.0, 0.5, 1.0]  # clamp(x, -0.5, 0.5): -0.5 and 0.5 lie on the bounds
RELU6_X = [-1.0, 0.0, 3.0, 6.0, 7.0]  # relu6 = clamp(x, 0, 6): 0 and 6 lie on the bounds; also relu
HARDTANH_X = [-2.0, -1.0, 0.0, 1.0, 2.0]  # hardtanh = clamp(x, -1, 1): -1 and 1 lie on the bounds
# book:end
KINKS = {"clamp": "-0.5,0.5", "relu6": "0,6", "hardtanh": "-1,1", "relu": "0"}  # recorded in the dump
# book:begin tensor_setup
MIN, MAX = -0.5, 0.5  # the same bounds as above, held in tensors the size of x
# book:end


# book:begin grad_of
def grad_of(fn, values):
    """fn(x) and d sum(fn(x)) / dx."""
    x = torch.tensor(values, requires_grad=True)
    out = fn(x)
    out.sum().backward()
    return x.detach(), out.detach(), x.grad
# book:end


def tensor_bounds() -> dict:
    """clamp(x, min=tensor, max=tensor), and the gradients of x and of both bounds."""
    # book:begin tensor_bounds
    x = torch.tensor(CLAMP_X, requires_grad=True)
    low = torch.full_like(x, MIN, requires_grad=True)
    high = torch.full_like(x, MAX, requires_grad=True)
    out = torch.clamp(x, min=low, max=high)
    out.sum().backward()
    # book:end
    print(f"tclamp   x {x.tolist()} out {out.tolist()} grad {x.grad.tolist()}")
    print(f"         min.grad {low.grad.tolist()} max.grad {high.grad.tolist()}")
    return {"tclamp.x": x.detach(), "tclamp.min": low.detach(), "tclamp.max": high.detach(), "tclamp.out": out.detach(),
            "tclamp.grad": x.grad, "tclamp.min.grad": low.grad, "tclamp.max.grad": high.grad}


def main():
    args = experiment_args(("ref", "tensor-bounds"))
    input_sha256 = inputs_sha256(CLAMP_X, RELU6_X, HARDTANH_X)
    if args.variant == "tensor-bounds":
        out = args.out / f"torch-{args.variant}.safetensors"
        write_torch_dump(out, tensor_bounds(), experiment="p13", variant=args.variant, input_sha256=input_sha256,
                         **{"tclamp.kinks": f"{MIN:g},{MAX:g}"})
        return
    # book:begin ref
    results = {
        "clamp": grad_of(lambda x: x.clamp(-0.5, 0.5), CLAMP_X),
        "relu6": grad_of(F.relu6, RELU6_X),
        "hardtanh": grad_of(F.hardtanh, HARDTANH_X),  # min_val=-1, max_val=1
        "relu": grad_of(F.relu, RELU6_X),
    }
    # book:end
    tensors = {}
    for name, (x, out, grad) in results.items():
        print(f"{name:<8} x {x.tolist()} out {out.tolist()} grad {grad.tolist()}")
        tensors.update({f"{name}.x": x, f"{name}.out": out, f"{name}.grad": grad})
    metadata = {f"{name}.kinks": kinks for name, kinks in KINKS.items()}
    out = args.out / f"torch-{args.variant}.safetensors"
    write_torch_dump(out, tensors, experiment="p13", variant=args.variant, input_sha256=input_sha256, **metadata)


if __name__ == "__main__":
    main()
