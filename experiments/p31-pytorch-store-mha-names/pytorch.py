"""p31, PyTorch side: a small model with MultiheadAttention, InstanceNorm1d (affine) and PReLU,
saved with torch.save(state_dict) (the file burn's PytorchStore reads), and its output."""

import torch

from pita.torch_dump import write_torch_dump
from pita_lab.args import experiment_args
from pita_lab.inputs import inputs_sha256, ramp

D_MODEL, N_HEADS, SEQ = 4, 2, 3


# book:begin model
class Net(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.attn = torch.nn.MultiheadAttention(D_MODEL, N_HEADS, batch_first=True)
        self.norm = torch.nn.InstanceNorm1d(SEQ, affine=True)
        self.act = torch.nn.PReLU()

    def forward(self, x):
        out, _ = self.attn(x, x, x, need_weights=False)
        return self.act(self.norm(out))
# book:end


def parameters() -> dict:
    """Every parameter from the ramp, divided by 8 (exact in float32), in state_dict order."""
    # book:begin params
    return {
        "attn.in_proj_weight": ramp(48).reshape(12, 4) / 8,  # [3·E, E]: query, key, value rows
        "attn.in_proj_bias": ramp(12, 48) / 8,
        "attn.out_proj.weight": ramp(16, 60).reshape(4, 4) / 8,
        "attn.out_proj.bias": ramp(4, 76) / 8,
        "norm.weight": ramp(3, 6) / 8,
        "norm.bias": ramp(3, 3) / 8,
        "act.weight": ramp(1, 6) / 8,
    }
    # book:end


def main():
    args = experiment_args(("ref",))
    params = parameters()
    x = ramp(12).reshape(1, SEQ, D_MODEL)
    input_sha256 = inputs_sha256(x, *params.values())
    net = Net()
    net.load_state_dict({name: torch.from_numpy(value) for name, value in params.items()})
    net.eval()
    args.out.mkdir(parents=True, exist_ok=True)
    # book:begin save
    torch.save(net.state_dict(), args.out / "net.pt")
    # book:end
    with torch.no_grad():
        y = net(torch.from_numpy(x))
    for name, value in net.state_dict().items():
        print(name, list(value.shape))
    print("y", [round(v, 6) for v in y.reshape(-1).tolist()])
    out = args.out / f"torch-{args.variant}.safetensors"
    write_torch_dump(out, {"y": y}, experiment="p31", variant=args.variant, input_sha256=input_sha256)


if __name__ == "__main__":
    main()
