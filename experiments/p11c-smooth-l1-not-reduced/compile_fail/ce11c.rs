//! ce11c: the element-wise `[2, 3]` loss from `SmoothL1Loss::forward` handed to
//! `backward_scalar` is rejected by the compiler.
use burn::nn::loss::SmoothL1LossConfig;
use burn::tensor::{Device, Tensor};
use pita::guard::backward_scalar;
use pita_lab::inputs::ramp;

fn main() {
    let device = Device::flex().autodiff();
    let pred = Tensor::<1>::from_floats(ramp(6, 0).as_slice(), &device).reshape([2, 3]);
    let target = Tensor::<2>::zeros([2, 3], &device);

    let loss = SmoothL1LossConfig::new().init().forward(pred, target); // [2, 3]: not reduced
    let _grads = backward_scalar(loss);
}
