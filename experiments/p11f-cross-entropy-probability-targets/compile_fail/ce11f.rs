//! ce11f: class probabilities handed to burn's `CrossEntropyLoss::forward`, which takes class
//! indices (`Tensor<1, Int>`), are rejected by the compiler.
use burn::nn::loss::CrossEntropyLossConfig;
use burn::tensor::{Device, Tensor};
use pita_lab::inputs::ramp;

fn main() {
    let device = Device::flex().autodiff();
    let logits = Tensor::<1>::from_floats(ramp(12, 0).as_slice(), &device).reshape([4, 3]);
    // book:begin mistake
    let target = Tensor::<2>::from_floats([[0.7, 0.3, 0.0], [0.0, 0.7, 0.3], [0.3, 0.0, 0.7], [0.1, 0.1, 0.8]], &device);
    let ce = CrossEntropyLossConfig::new().init(&device);
    let _loss = ce.forward(logits, target); // as in PyTorch
    // book:end
}
