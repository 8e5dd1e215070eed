"""p33, PyTorch side: a one-layer GRU (batch_first) whose packed gate weights come from the ramp,
saved with safetensors' `save_file(state_dict)` (the file burn's SafetensorsStore reads), and its
outputs: every hidden state and the final h."""

import torch
from safetensors.torch import save_file

from pita.torch_dump import write_torch_dump
from pita_lab.args import experiment_args
from pita_lab.inputs import inputs_sha256, ramp

D_INPUT, D_HIDDEN, SEQ, BATCH = 3, 4, 5, 2


# book:begin model
class Net(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.gru = torch.nn.GRU(D_INPUT, D_HIDDEN, batch_first=True)

    def forward(self, x):
        out, h_n = self.gru(x)
        return out, h_n[0]  # h_n: [num_layers, batch, hidden] -> layer 0
# book:end


def parameters() -> dict:
    """Every parameter from the ramp, divided by a power of two (exact in float32), in state_dict order."""
    # book:begin params
    return {
        "gru.weight_ih_l0": ramp(36).reshape(12, 3) / 16,  # [3·H, in]: rows r, z, n
        "gru.weight_hh_l0": ramp(48, 2).reshape(12, 4) / 16,  # [3·H, H]
        "gru.bias_ih_l0": ramp(12, 1) / 8,  # [3·H]
        "gru.bias_hh_l0": ramp(12, 3) / 8,  # [3·H]
    }
    # book:end


def main():
    args = experiment_args(("ref",))
    params = parameters()
    x = ramp(BATCH * SEQ * D_INPUT).reshape(BATCH, SEQ, D_INPUT)
    input_sha256 = inputs_sha256(x, *params.values())
    net = Net()
    net.load_state_dict({name: torch.from_numpy(value) for name, value in params.items()})
    args.out.mkdir(parents=True, exist_ok=True)
    # book:begin save
    save_file(net.state_dict(), args.out / "gru.safetensors")
    # book:end
    with torch.no_grad():
        out, h_n = net(torch.from_numpy(x))
    for name, value in net.state_dict().items():
        print(name, list(value.shape))
    print("h_n", [round(v, 6) for v in h_n.reshape(-1).tolist()])
    dump = args.out / f"torch-{args.variant}.safetensors"
    write_torch_dump(dump, {"out": out, "h_n": h_n}, experiment="p33", variant=args.variant, input_sha256=input_sha256)


if __name__ == "__main__":
    main()
