"""p09, PyTorch side: the feed-forward block of nn.TransformerEncoderLayer with its default activation."""

import torch

from pita.torch_dump import write_torch_dump
from pita_lab.args import experiment_args
from pita_lab.inputs import inputs_sha256, ramp

# book:begin setup
D_MODEL, D_FF = 2, 2
W1 = [[-1.0, 1.0], [2.0, -0.5]]  # linear1.weight, [d_ff, d_model]
B1 = [0.0, 0.0]
W2 = [[1.0, 0.0], [0.0, 1.0]]  # linear2.weight, [d_model, d_ff]
B2 = [0.0, 0.0]
# book:end


def main():
    args = experiment_args(("ref",))
    inputs = ramp(4)
    input_sha256 = inputs_sha256(inputs, W1, B1, W2, B2)
    x = torch.from_numpy(inputs).reshape(1, 2, D_MODEL)  # [batch, seq, d_model]
    # book:begin ref
    layer = torch.nn.TransformerEncoderLayer(D_MODEL, nhead=1, dim_feedforward=D_FF, batch_first=True)
    layer.eval()
    # book:end
    with torch.no_grad():
        layer.linear1.weight.copy_(torch.tensor(W1))
        layer.linear1.bias.copy_(torch.tensor(B1))
        layer.linear2.weight.copy_(torch.tensor(W2))
        layer.linear2.bias.copy_(torch.tensor(B2))
        # book:begin ff
        hidden = layer.linear1(x)
        out = layer.linear2(layer.dropout(layer.activation(hidden)))  # the layer's feed-forward block
        # book:end
    print("TransformerEncoderLayer activation:", layer.activation.__name__)
    decoder_layer = torch.nn.TransformerDecoderLayer(D_MODEL, nhead=1, dim_feedforward=D_FF, batch_first=True)
    print("TransformerDecoderLayer activation:", decoder_layer.activation.__name__)
    print("hidden", hidden.reshape(-1).tolist())
    print("out", out.reshape(-1).tolist())
    write_torch_dump(args.out / f"torch-{args.variant}.safetensors", {"hidden": hidden, "out": out},
                     experiment="p09", variant=args.variant, input_sha256=input_sha256,
                     activation=layer.activation.__name__)  # the default layer's own, for the defaults table


if __name__ == "__main__":
    main()
