"""p32, PyTorch side: a one-layer LSTM (batch_first) whose packed gate weights come from the ramp,
saved with safetensors' `save_file(state_dict)` (the file burn's SafetensorsStore reads), and its
outputs: every hidden state and the final (h, c)."""

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
        self.lstm = torch.nn.LSTM(D_INPUT, D_HIDDEN, batch_first=True)

    def forward(self, x):
        out, (h_n, c_n) = self.lstm(x)
        return out, h_n[0], c_n[0]  # h_n, c_n: [num_layers, batch, hidden] -> layer 0
# book:end


def parameters() -> dict:
    """Every parameter from the ramp, divided by a power of two (exact in float32), in state_dict order."""
    # book:begin params
    return {
        "lstm.weight_ih_l0": ramp(48).reshape(16, 3) / 16,  # [4·H, in]: rows i, f, g, o
        "lstm.weight_hh_l0": ramp(64, 2).reshape(16, 4) / 16,  # [4·H, H]
        "lstm.bias_ih_l0": ramp(16, 1) / 8,  # [4·H]
        "lstm.bias_hh_l0": ramp(16, 3) / 8,  # [4·H]
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
    save_file(net.state_dict(), args.out / "lstm.safetensors")
    # book:end
    with torch.no_grad():
        out, h_n, c_n = net(torch.from_numpy(x))
    for name, value in net.state_dict().items():
        print(name, list(value.shape))
    print("h_n", [round(v, 6) for v in h_n.reshape(-1).tolist()])
    print("c_n", [round(v, 6) for v in c_n.reshape(-1).tolist()])
    # A fresh LSTM's batch_first, as PyTorch sets it (the model above overrides it), for the defaults table.
    batch_first = torch.nn.LSTM(D_INPUT, D_HIDDEN).batch_first
    dump = args.out / f"torch-{args.variant}.safetensors"
    write_torch_dump(dump, {"out": out, "h_n": h_n, "c_n": c_n}, experiment="p32", variant=args.variant,
                     input_sha256=input_sha256, batch_first=batch_first)


if __name__ == "__main__":
    main()
