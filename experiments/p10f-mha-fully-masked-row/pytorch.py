"""p10f, PyTorch side: nn.MultiheadAttention on a batch with one fully padded sequence."""

import torch

from pita.torch_dump import write_torch_dump
from pita_lab.args import experiment_args
from pita_lab.inputs import inputs_sha256, ramp

# book:begin setup
BATCH, SEQ, D_MODEL = 2, 3, 2
KEY_PADDING_MASK = [[False, False, True],  # sequence 0: last token is padding
                    [True, True, True]]    # sequence 1: empty, every token is padding
# book:end


def main():
    args = experiment_args(("weights", "noweights"))
    x_in = ramp(BATCH * SEQ * D_MODEL)
    in_w, in_b = ramp(3 * D_MODEL * D_MODEL, 1), ramp(3 * D_MODEL, 3)
    out_w, out_b = ramp(D_MODEL * D_MODEL, 9), ramp(D_MODEL, 6)
    mask_in = [float(m) for row in KEY_PADDING_MASK for m in row]
    input_sha256 = inputs_sha256(x_in, in_w, in_b, out_w, out_b, mask_in)
    mha = torch.nn.MultiheadAttention(D_MODEL, 1, batch_first=True)  # dropout 0.0
    with torch.no_grad():
        mha.in_proj_weight.copy_(torch.from_numpy(in_w).reshape(3 * D_MODEL, D_MODEL))
        mha.in_proj_bias.copy_(torch.from_numpy(in_b))
        mha.out_proj.weight.copy_(torch.from_numpy(out_w).reshape(D_MODEL, D_MODEL))
        mha.out_proj.bias.copy_(torch.from_numpy(out_b))
    x = torch.from_numpy(x_in).reshape(BATCH, SEQ, D_MODEL)
    mask = torch.tensor(KEY_PADDING_MASK)  # True = padding, ignored
    with torch.no_grad():
        if args.variant == "weights":
            # book:begin weights
            out, _ = mha(x, x, x, key_padding_mask=mask)  # need_weights=True by default
            # book:end
        else:
            # book:begin noweights
            out, _ = mha(x, x, x, key_padding_mask=mask, need_weights=False)
            # book:end
    for b in range(BATCH):
        print(f"out[{b}]", out[b].tolist())
    path = args.out / f"torch-{args.variant}.safetensors"
    write_torch_dump(path, {"out": out}, experiment="p10f", variant=args.variant, input_sha256=input_sha256)


if __name__ == "__main__":
    main()
