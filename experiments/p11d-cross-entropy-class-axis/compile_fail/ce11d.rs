//! ce11d: burn's CrossEntropyLoss module takes `[batch, classes]` logits only, so handing it
//! PyTorch-style `[N, C, L]` logits is rejected by the compiler.
use burn::nn::loss::CrossEntropyLossConfig;
use burn::tensor::{Device, Int, Tensor};
use pita_lab::inputs::ramp;

fn main() {
    let device = Device::flex().autodiff();
    let logits = Tensor::<1>::from_floats(ramp(12, 0).as_slice(), &device).reshape([2, 3, 2]); // [N, C, L]
    let targets = Tensor::<1, Int>::from_ints([0, 2, 1, 2], &device); // one class per (n, l)

    let ce = CrossEntropyLossConfig::new().init(&device);
    let _loss = ce.forward(logits, targets);
}
