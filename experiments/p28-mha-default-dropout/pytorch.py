"""p28, PyTorch side: self-attention through nn.MultiheadAttention in training mode, with its
default dropout (0.0) and with dropout 0.5."""

import torch

from pita.torch_dump import write_torch_dump
from pita_lab.args import experiment_args
from pita_lab.inputs import inputs_sha256, ramp

# book:begin setup
D_MODEL, HEADS, TOKENS = 2, 1, 6
SEED = 0
IDENTITY = [1.0, 0.0, 0.0, 1.0]  # every projection is the identity, every bias 0
ZEROS = [0.0, 0.0]
# book:end


def main():
    args = experiment_args(("ref", "drop"))
    torch.manual_seed(SEED)
    # book:begin inputs
    inputs = ramp(12)  # 0.1·k − 0.5, k = 0..11: one sequence of 6 tokens, [1, 6, 2]
    # book:end
    input_sha256 = inputs_sha256(inputs, IDENTITY, ZEROS)
    if args.variant == "ref":
        # book:begin ref
        mha = torch.nn.MultiheadAttention(D_MODEL, HEADS, batch_first=True)  # dropout=0.0
        # book:end
    else:
        # book:begin drop
        mha = torch.nn.MultiheadAttention(D_MODEL, HEADS, batch_first=True, dropout=0.5)
        # book:end
    eye = torch.tensor(IDENTITY).reshape(2, 2)
    with torch.no_grad():
        mha.in_proj_weight.copy_(torch.cat([eye, eye, eye]))
        mha.in_proj_bias.zero_()
        mha.out_proj.weight.copy_(eye)
        mha.out_proj.bias.zero_()
    x = torch.from_numpy(inputs).reshape(1, TOKENS, D_MODEL)
    print("training", mha.training, "dropout", mha.dropout)
    # book:begin forward
    context, weights = mha(x, x, x)  # training mode; weights: [1, 6, 6]
    # book:end
    print("weights zeros", int((weights == 0).sum()), "of", weights.numel())
    print("weights row sums", [round(v, 6) for v in weights.sum(-1).reshape(-1).tolist()])
    print("context", [round(v, 6) for v in context.reshape(-1).tolist()])
    tensors = {"context": context, "weights": weights}
    out_path = args.out / f"torch-{args.variant}.safetensors"
    write_torch_dump(out_path, tensors, experiment="p28", variant=args.variant, input_sha256=input_sha256,
                     dropout=mha.dropout)


if __name__ == "__main__":
    main()
