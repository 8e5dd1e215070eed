"""p10g, PyTorch side: nn.Embedding with padding_idx, one SGD step by hand, and a fresh layer's init."""

import torch

from pita.torch_dump import write_torch_dump
from pita_lab.args import experiment_args
from pita_lab.inputs import inputs_sha256, ramp

# book:begin setup
VOCAB, D_MODEL, PAD = 3, 2, 0
IDS = [[0, 1, 0, 2]]  # one sequence; id 0 is padding
LR = 0.5
# book:end


def main():
    args = experiment_args(("pad", "init"))
    # book:begin weight
    weight = [0.0, 0.0] + ramp(4, 1).tolist()  # row 0 (padding) is zero, as PyTorch keeps it
    # book:end
    input_sha256 = inputs_sha256(weight, [float(i) for row in IDS for i in row], [LR])
    if args.variant == "init":
        torch.manual_seed(0)
        # book:begin init
        fresh = torch.nn.Embedding(VOCAB, D_MODEL, padding_idx=PAD)
        # book:end
        print("fresh weight", fresh.weight.tolist())
        tensors = {"weight.pad_row": fresh.weight[PAD].detach()}
    else:
        # book:begin pad
        emb = torch.nn.Embedding(VOCAB, D_MODEL, padding_idx=PAD)
        with torch.no_grad():
            emb.weight.copy_(torch.tensor(weight).reshape(VOCAB, D_MODEL))
        ids = torch.tensor(IDS)
        out = emb(ids)
        out.sum().backward()
        with torch.no_grad():
            step1 = emb.weight - LR * emb.weight.grad  # one SGD step
            out_step1 = torch.nn.functional.embedding(ids, step1)
        # book:end
        print("out", out.reshape(-1, D_MODEL).tolist())
        print("weight.grad", emb.weight.grad.tolist())
        print("weight.step1", step1.tolist())
        print("out.step1", out_step1.reshape(-1, D_MODEL).tolist())
        tensors = {"out": out, "weight.grad": emb.weight.grad, "weight.step1": step1, "out.step1": out_step1}
    path = args.out / f"torch-{args.variant}.safetensors"
    write_torch_dump(path, tensors, experiment="p10g", variant=args.variant, input_sha256=input_sha256,
                     padding_idx=PAD, padding_tokens=sum(row.count(PAD) for row in IDS))


if __name__ == "__main__":
    main()
