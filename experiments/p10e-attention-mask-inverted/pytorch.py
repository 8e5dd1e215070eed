"""p10e, PyTorch side: scaled_dot_product_attention with a boolean attn_mask (True = attend)."""

import torch
import torch.nn.functional as F

from pita.torch_dump import write_torch_dump
from pita_lab.args import experiment_args
from pita_lab.inputs import inputs_sha256, ramp

# book:begin setup
SEQ_Q, SEQ_K, HEAD_DIM = 2, 3, 2
MASK = [[True, False, False],  # query 0: key 0 only
        [True, True, False]]   # query 1: keys 0 and 1
# book:end


def main():
    args = experiment_args(("sdpa",))
    q_in, k_in, v_in = ramp(SEQ_Q * HEAD_DIM), ramp(SEQ_K * HEAD_DIM, 4), ramp(SEQ_K * HEAD_DIM, 10)
    mask_in = [float(m) for row in MASK for m in row]
    input_sha256 = inputs_sha256(q_in, k_in, v_in, mask_in)
    q = torch.from_numpy(q_in).reshape(1, 1, SEQ_Q, HEAD_DIM)
    k = torch.from_numpy(k_in).reshape(1, 1, SEQ_K, HEAD_DIM)
    v = torch.from_numpy(v_in).reshape(1, 1, SEQ_K, HEAD_DIM)
    mask = torch.tensor(MASK).reshape(1, 1, SEQ_Q, SEQ_K)
    # book:begin sdpa
    out = F.scaled_dot_product_attention(q, k, v, attn_mask=mask)  # True = attend
    # book:end
    print("out", out.reshape(SEQ_Q, HEAD_DIM).tolist())
    path = args.out / f"torch-{args.variant}.safetensors"
    write_torch_dump(path, {"value": v, "out": out}, experiment="p10e", variant=args.variant, input_sha256=input_sha256)


if __name__ == "__main__":
    main()
