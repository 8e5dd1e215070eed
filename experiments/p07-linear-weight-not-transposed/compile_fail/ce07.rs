//! ce07: a weight typed as PyTorch's `[out, in]` layout cannot go into burn's Linear as it is.
use burn::module::Param;
use burn::nn::Linear;
use burn::tensor::{Device, Tensor};
use pita::torch_layout::TorchLinearWeight;

// book:begin helper
/// The port's own helper: builds a Linear from a weight already in burn's `[in, out]` layout.
fn burn_linear(weight: Tensor<2>, bias: Tensor<1>) -> Linear {
    Linear { weight: Param::from_tensor(weight), bias: Some(Param::from_tensor(bias)) }
}
// book:end

fn main() {
    let device = Device::flex().autodiff();
    let state_dict_weight = Tensor::<2>::from_floats([[1.0, 2.0], [3.0, 4.0]], &device);
    // book:begin mistake
    let weight = TorchLinearWeight::new(state_dict_weight); // PyTorch fc.weight, [out, in]
    let bias = Tensor::<1>::from_floats([0.5, -0.5], &device);
    let _fc = burn_linear(weight, bias); // forgot the transpose
    // book:end
}
