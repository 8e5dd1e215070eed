"""p08a, PyTorch side: nn.LSTM and nn.GRU draw every weight and bias from U(±1/√hidden_size).
Each packed parameter is cut into its gates and named like burn's gate Linears, then every
piece's statistics go into the dump's metadata (see burn.rs for the same statistics in Rust)."""

import inspect
import math

import numpy as np
import torch

from pita.torch_dump import write_torch_dump
from pita_lab.args import experiment_args
from pita_lab.inputs import inputs_sha256

# book:begin setup
INPUT, HIDDEN = 64, 256
SEED = 0
# book:end
# PyTorch's gate order inside the packed [gates·H, ...] tensors, named like burn's gate controllers.
GATES = {
    "lstm": ("input_gate", "forget_gate", "cell_gate", "output_gate"),  # i, f, g, o
    "gru": ("reset_gate", "update_gate", "new_gate"),  # r, z, n
}
TRANSFORMS = {"ih": "input_transform", "hh": "hidden_transform"}


def make(rnn: str) -> torch.nn.RNNBase:
    if rnn == "lstm":
        # book:begin lstm
        lstm = torch.nn.LSTM(INPUT, HIDDEN)  # bias=True
        # book:end
        return lstm
    # book:begin gru
    gru = torch.nn.GRU(INPUT, HIDDEN)
    # book:end
    return gru


def gate_parameters(module: torch.nn.RNNBase, gates: tuple[str, ...]) -> list[dict]:
    """Every gate's weight and bias (weight_ih_l0 cut into its gates, ...), in burn's order: gate,
    then input/hidden transform, then weight, bias; with the fans of burn's Linear holding it."""
    found = []
    for g, gate in enumerate(gates):
        for short, transform in TRANSFORMS.items():
            weight = getattr(module, f"weight_{short}_l0").detach().chunk(len(gates))[g]
            bias = getattr(module, f"bias_{short}_l0").detach().chunk(len(gates))[g]
            fan_out, fan_in = weight.shape  # PyTorch's [out, in]
            for kind, values in (("weight", weight), ("bias", bias)):
                found.append({"name": f"{gate}.{transform}.{kind}", "is_bias": kind == "bias",
                              "fan_in": fan_in, "fan_out": fan_out, "values": values.numpy()})
    return found


def stats(values: np.ndarray, bound: float) -> dict:
    """std, min, max, the fraction of |v| above `bound` and the Kolmogorov–Smirnov distance to
    U(-bound, bound), in float64, like burn.rs's `stats`."""
    v = np.sort(values.astype(np.float64).ravel())
    n = v.size
    cdf = np.clip((v + bound) / (2 * bound), 0.0, 1.0)
    ks = max(float(np.max(np.arange(1, n + 1) / n - cdf)), float(np.max(cdf - np.arange(n) / n)))
    return {"numel": n, "std": float(v.std()), "min": float(v[0]), "max": float(v[-1]),
            "beyond": float(np.mean(np.abs(v) > bound)), "ks": ks}


def initializer_source(module: torch.nn.RNNBase) -> str:
    """The lines of the module's `reset_parameters` that pick the bound and draw, read from
    PyTorch's source at run time."""
    lines = inspect.getsource(type(module).reset_parameters).splitlines()
    return "; ".join(line.strip() for line in lines if "stdv =" in line or "init." in line)


def joined(values) -> str:
    return ",".join(repr(v) for v in values)


def main():
    args = experiment_args(("lstm", "gru"))
    input_sha256 = inputs_sha256([INPUT, HIDDEN, SEED])
    torch.manual_seed(SEED)
    module = make(args.variant)
    bound = 1 / math.sqrt(module.hidden_size)
    parameters = gate_parameters(module, GATES[args.variant])
    found = [stats(p["values"], bound) for p in parameters]

    print(f"{args.variant} reset_parameters: {initializer_source(module)}; "
          f"bound 1/sqrt(hidden_size) = {bound!r}")
    print(f"{'parameter':<34} {'numel':>6} {'std':>10} {'min':>10} {'max':>10} {'beyond':>8}")
    for p, s in zip(parameters, found):
        print(f"{p['name']:<34} {s['numel']:>6} {s['std']:>10.6f} {s['min']:>10.6f} {s['max']:>10.6f} {s['beyond']:>8.4f}")

    def beyond(bias: bool) -> torch.Tensor:
        return torch.tensor([s["beyond"] for p, s in zip(parameters, found) if p["is_bias"] == bias], dtype=torch.float32)

    metadata = {
        "rnn": args.variant, "input_size": module.input_size, "hidden_size": module.hidden_size, "seed": SEED,
        "initializer": initializer_source(module), "bound": repr(bound),
        "params": ",".join(p["name"] for p in parameters),
        "is_bias": ",".join("true" if p["is_bias"] else "false" for p in parameters),
        **{key: joined(p[key] for p in parameters) for key in ("fan_in", "fan_out")},
        **{key: joined(s[key] for s in found) for key in ("numel", "std", "min", "max", "beyond", "ks")},
    }
    tensors = {"weight.beyond_bound": beyond(False), "bias.beyond_bound": beyond(True)}
    write_torch_dump(args.out / f"torch-{args.variant}.safetensors", tensors, experiment="p08a",
                     variant=args.variant, input_sha256=input_sha256, **metadata)


if __name__ == "__main__":
    main()
