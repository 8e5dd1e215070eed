//! ce11e: soft (float) targets handed to burn's `BinaryCrossEntropyLoss::forward`, which takes
//! `Tensor<D, Int>`, are rejected by the compiler.
use burn::nn::loss::BinaryCrossEntropyLossConfig;
use burn::tensor::{Device, Tensor};
use pita_lab::inputs::ramp;

fn main() {
    let device = Device::flex().autodiff();
    let logits = Tensor::<1>::from_floats(ramp(6, 3).as_slice(), &device);
    // book:begin mistake
    let soft_targets = Tensor::<1>::from_floats([0.1, 0.9, 0.9, 0.1, 0.9, 0.1], &device);
    let bce = BinaryCrossEntropyLossConfig::new().with_logits(true).init(&device);
    let _loss = bce.forward(logits, soft_targets); // as in PyTorch
    // book:end
}
