"""p24, PyTorch side: CosineAnnealingLR with an initial lr above 1 and with an ordinary one."""

import torch

from pita.torch_dump import write_torch_dump
from pita_lab.args import experiment_args
from pita_lab.inputs import inputs_sha256

# book:begin setup
LR_BIG = 2.0  # e.g. SGD on a loss with small gradients, or a scaled-lr recipe
LR = 0.1
T_MAX = 4
ITERS = 6  # past T_MAX: the cosine goes on, it does not restart
# book:end


def main():
    args = experiment_args(("cosine-big", "cosine"))
    lr = LR_BIG if args.variant == "cosine-big" else LR
    input_sha256 = inputs_sha256([LR_BIG, LR])
    w = torch.nn.Parameter(torch.zeros(1))
    # book:begin schedule
    optimizer = torch.optim.SGD([w], lr=lr)
    scheduler = torch.optim.lr_scheduler.CosineAnnealingLR(optimizer, T_max=T_MAX)
    lrs = []
    for _ in range(ITERS):
        lrs.append(optimizer.param_groups[0]["lr"])  # the lr this iteration trains with
        optimizer.step()
        scheduler.step()
    print("lr", lrs)
    # book:end
    out = args.out / f"torch-{args.variant}.safetensors"
    write_torch_dump(out, {"lr": torch.tensor(lrs, dtype=torch.float32)}, experiment="p24", variant=args.variant,
                     input_sha256=input_sha256, initial_lr=lr, t_max=T_MAX)


if __name__ == "__main__":
    main()
