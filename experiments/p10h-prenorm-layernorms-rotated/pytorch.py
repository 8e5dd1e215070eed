"""p10h, PyTorch side: pre-norm Transformer stacks (`norm_first=True`) whose LayerNorms carry
distinct weights, saved with torch.save for burn's PytorchStore, and their outputs. `record`
records the forward pass of `ref`'s model module by module for `pita trace`."""

import numpy as np
import torch

import pita.torch
from pita.torch_dump import write_torch_dump
from pita_lab.args import experiment_args
from pita_lab.inputs import inputs_sha256, ramp

VARIANTS = ("ref", "equal", "post", "stack", "decoder", "record")
D_MODEL, N_HEADS, D_FF = 8, 2, 16
BATCH, SEQ, MEMORY_SEQ = 2, 3, 4
PATTERN = ramp(11)  # -0.5, -0.4, …, 0.5: every parameter is made of these


# book:begin model
def encoder(norm_first=True, num_layers=1, final_norm=False):
    layer = torch.nn.TransformerEncoderLayer(D_MODEL, N_HEADS, D_FF, dropout=0.0,
                                             batch_first=True, norm_first=norm_first)
    norm = torch.nn.LayerNorm(D_MODEL) if final_norm else None
    return torch.nn.TransformerEncoder(layer, num_layers, norm=norm, enable_nested_tensor=False)


def decoder():
    layer = torch.nn.TransformerDecoderLayer(D_MODEL, N_HEADS, D_FF, dropout=0.0,
                                             batch_first=True, norm_first=True)
    return torch.nn.TransformerDecoder(layer, 1)
# book:end


def model(variant: str) -> torch.nn.Module:
    return {
        "ref": encoder, "equal": encoder, "record": encoder,
        "post": lambda: encoder(norm_first=False),
        "stack": lambda: encoder(num_layers=2, final_norm=True),
        "decoder": decoder,
    }[variant]()


def pattern(n: int, start: int) -> np.ndarray:
    """n values of PATTERN, stepping by 7 (mod 11) from `start`: bounded, varied, exact."""
    return PATTERN[(7 * np.arange(n) + start) % len(PATTERN)]


# book:begin fill
def fill(net: torch.nn.Module, default_norms: bool):
    """The i-th parameter gets pattern(n, i) / 4 (a LayerNorm's γ: 1/2 + pattern(n, i) / 2), so
    every norm differs from every other. With default_norms, LayerNorms keep their init (γ = 1,
    β = 0). Small values keep the outputs small, where float32 rounds finer."""
    norms = {f"{name}.{p}" for name, m in net.named_modules()
             if isinstance(m, torch.nn.LayerNorm) for p in ("weight", "bias")}
    with torch.no_grad():
        for i, (name, param) in enumerate(net.named_parameters()):
            if name in norms and default_norms:
                continue
            if name in norms and name.endswith("weight"):
                values = pattern(param.numel(), i) / 2 + np.float32(0.5)  # γ in [0.25, 0.75]
            else:
                values = pattern(param.numel(), i) / 4
            param.copy_(torch.from_numpy(values.reshape(param.shape)))
# book:end


def main():
    args = experiment_args(VARIANTS)
    # not a plain ramp: every row of a ramp normalises to the same vector, and its large mean
    # against a small spread makes LayerNorm's float32 result depend on the summation order.
    # The offsets keep every output away from 0, where a relative difference is unstable.
    x_values, memory_values = pattern(BATCH * SEQ * D_MODEL, 4) / 2, pattern(BATCH * MEMORY_SEQ * D_MODEL, 2) / 2
    input_sha256 = inputs_sha256(x_values, memory_values, PATTERN)
    x = torch.from_numpy(x_values).reshape(BATCH, SEQ, D_MODEL)
    memory = torch.from_numpy(memory_values).reshape(BATCH, MEMORY_SEQ, D_MODEL)
    net = model(args.variant)
    fill(net, default_norms=args.variant == "equal")
    net.eval()  # dropout is 0 anyway; autograd stays on, so PyTorch runs the Python path module by module
    args.out.mkdir(parents=True, exist_ok=True)
    torch.save(net.state_dict(), args.out / f"{args.variant}.pt")
    for name, value in net.state_dict().items():
        if "norm" in name:
            print(name, [round(v, 2) for v in value.tolist()])
    if args.variant == "record":
        # book:begin record
        with pita.torch.Recorder(net) as recorder:  # a forward hook on every submodule
            recorder.params()
            net(x)
        recorder.write(args.out / "torch-record.safetensors", experiment="p10h", variant="record",
                       input_sha256=input_sha256)
        # book:end
        print("execution_order", recorder.execution_order)
        return
    if args.variant == "stack":
        # book:begin transformer
        full = torch.nn.Transformer(D_MODEL, N_HEADS, 1, 1, D_FF, dropout=0.0, batch_first=True)
        print("nn.Transformer: encoder.norm", type(full.encoder.norm).__name__, "decoder.norm", type(full.decoder.norm).__name__)
        # book:end
    y = net(x, memory) if args.variant == "decoder" else net(x)
    print("y[0, 0]", [round(v, 6) for v in y[0, 0].tolist()])
    write_torch_dump(args.out / f"torch-{args.variant}.safetensors", {"y": y.detach()}, experiment="p10h",
                     variant=args.variant, input_sha256=input_sha256)


if __name__ == "__main__":
    main()
