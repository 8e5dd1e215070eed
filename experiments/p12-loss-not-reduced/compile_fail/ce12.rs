//! ce12: a per-sample `[B, 1]` loss handed to `backward_scalar` is rejected by the compiler.
use burn::tensor::{Device, Tensor};
use pita::guard::backward_scalar;
use pita_lab::inputs::ramp;

fn main() {
    let device = Device::flex().autodiff();
    let prediction = Tensor::<1>::from_floats(ramp(4, 0).as_slice(), &device).reshape([4, 1]);
    let target = Tensor::<2>::zeros([4, 1], &device);

    let per_sample = (prediction - target).powi_scalar(2); // [4, 1], forgot .mean()
    let _grads = backward_scalar(per_sample);
}
