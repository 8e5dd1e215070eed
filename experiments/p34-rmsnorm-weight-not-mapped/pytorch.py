"""p34, PyTorch side: LayerNorm and RMSNorm (both with a learnt `weight`) whose parameters come from
the ramp, saved with safetensors' `save_file(state_dict)` (the file burn's SafetensorsStore reads),
and their outputs."""

import torch
from safetensors.torch import save_file

from pita.torch_dump import write_torch_dump
from pita_lab.args import experiment_args
from pita_lab.inputs import inputs_sha256, ramp

D_MODEL, ROWS, EPS = 4, 3, 1e-5


# book:begin model
class Net(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.ln = torch.nn.LayerNorm(D_MODEL, eps=EPS)
        self.rms = torch.nn.RMSNorm(D_MODEL, eps=EPS)  # eps set: the defaults differ (p10b)

    def forward(self, x):
        return self.ln(x), self.rms(x)
# book:end


def parameters() -> dict:
    """Every parameter from the ramp, divided by 4 (exact in float32), in state_dict order."""
    # book:begin params
    return {
        "ln.weight": ramp(4, 8) / 4,  # 0.075 … 0.15: none is the initial 1
        "ln.bias": ramp(4, 2) / 4,
        "rms.weight": ramp(4, 12) / 4,
    }
    # book:end


def main():
    args = experiment_args(("ref",))
    params = parameters()
    x = ramp(ROWS * D_MODEL).reshape(ROWS, D_MODEL)
    input_sha256 = inputs_sha256(x, *params.values())
    net = Net()
    net.load_state_dict({name: torch.from_numpy(value) for name, value in params.items()})
    args.out.mkdir(parents=True, exist_ok=True)
    # book:begin save
    save_file(net.state_dict(), args.out / "norms.safetensors")
    # book:end
    with torch.no_grad():
        ln, rms = net(torch.from_numpy(x))
    for name, value in net.state_dict().items():
        print(name, [round(v, 6) for v in value.tolist()])
    print("ln", [round(v, 6) for v in ln.reshape(-1).tolist()])
    print("rms", [round(v, 6) for v in rms.reshape(-1).tolist()])
    dump = args.out / f"torch-{args.variant}.safetensors"
    write_torch_dump(dump, {"ln": ln, "rms": rms}, experiment="p34", variant=args.variant, input_sha256=input_sha256)


if __name__ == "__main__":
    main()
