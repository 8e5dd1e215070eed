//! Typed PyTorch weight layouts: a weight copied from PyTorch keeps its layout in its type until
//! it is converted, so it cannot be stored in a burn parameter as it is.
//!
//! PyTorch's `nn.Linear.weight` is `[out_features, in_features]` and computes `x Wᵀ + b`; burn's
//! `Linear.weight` is `[d_input, d_output]` and computes `x W + b`. A square weight copied without
//! a transpose has the right shape and computes `x W + b`: no error, wrong numbers.

use burn::module::Param;
use burn::nn::Linear;
use burn::tensor::Tensor;

use crate::Error;

// book:begin torch_linear_weight
/// What [`linear_from_torch`] panics with when the bias does not fit the weight.
pub const BIAS_LEN: &str = "bias length must equal out_features, the first axis of a PyTorch Linear weight";

/// A Linear weight in PyTorch's layout `[out_features, in_features]`.
/// Only [`linear_from_torch`] turns it into a burn parameter.
pub struct TorchLinearWeight(Tensor<2>);

impl TorchLinearWeight {
    /// Wraps a tensor read from a PyTorch state dict (`fc.weight`), shape `[out, in]`.
    pub fn new(weight: Tensor<2>) -> Self {
        TorchLinearWeight(weight)
    }
}

/// A burn Linear computing what PyTorch's `nn.Linear` with this weight and bias computes.
///
/// Cost: compares shapes (free), then one transpose on the device.
#[track_caller]
pub fn linear_from_torch(weight: TorchLinearWeight, bias: Tensor<1>) -> Linear {
    let [out_features, _] = weight.0.dims();
    assert_eq!(bias.dims(), [out_features], "{BIAS_LEN}");
    Linear {
        weight: Param::from_tensor(weight.0.transpose()), // [out, in] -> [in, out]
        bias: Some(Param::from_tensor(bias)),
    }
}
// book:end

/// [`linear_from_torch`] returning [`Error::Check`] instead of panicking when the bias does not
/// fit the weight.
///
/// Cost: compares shapes (free); then the transpose, as in [`linear_from_torch`].
pub fn try_linear_from_torch(weight: TorchLinearWeight, bias: Tensor<1>) -> Result<Linear, Error> {
    let [out_features, _] = weight.0.dims();
    if bias.dims() != [out_features] {
        let message = format!("{BIAS_LEN} ({out_features}); the bias has {}", bias.dims()[0]);
        return Err(Error::check("torch_layout::try_linear_from_torch", message));
    }
    Ok(linear_from_torch(weight, bias))
}

#[cfg(test)]
mod tests {
    use super::*;
    use burn::tensor::{Device, TensorData};

    fn device() -> Device {
        Device::flex()
    }

    fn values<const D: usize>(tensor: Tensor<D>) -> Vec<f32> {
        tensor.into_data().try_to_vec::<f32>().unwrap()
    }

    #[test]
    fn computes_x_times_weight_transposed_like_pytorch() {
        // PyTorch: W = [[1, 2], [3, 4]] ([out, in]), y = x Wᵀ + b.
        let w = Tensor::<2>::from_data(TensorData::new(vec![1.0f32, 2.0, 3.0, 4.0], [2, 2]), &device());
        let b = Tensor::<1>::from_floats([0.5, -0.5], &device());
        let fc = linear_from_torch(TorchLinearWeight::new(w), b);
        let x = Tensor::<2>::from_floats([[1.0, 10.0]], &device());
        // x Wᵀ = [1·1 + 10·2, 1·3 + 10·4] = [21, 43]
        assert_eq!(values(fc.forward(x)), vec![21.5, 42.5]);
    }

    #[test]
    fn non_square_weight_becomes_d_input_by_d_output() {
        let w = Tensor::<2>::zeros([3, 2], &device()); // PyTorch Linear(2, 3)
        let fc = linear_from_torch(TorchLinearWeight::new(w), Tensor::<1>::zeros([3], &device()));
        assert_eq!(fc.weight.val().dims(), [2, 3]);
        assert_eq!(fc.forward(Tensor::<2>::zeros([4, 2], &device())).dims(), [4, 3]);
    }

    #[test]
    fn the_result_form_names_both_lengths() {
        let w = Tensor::<2>::zeros([2, 3], &device());
        let error = try_linear_from_torch(TorchLinearWeight::new(w), Tensor::<1>::zeros([3], &device())).unwrap_err();
        assert!(error.to_string().ends_with("(2); the bias has 3"), "{error}");
    }

    #[test]
    #[should_panic(expected = "bias length must equal out_features")]
    fn rejects_a_weight_already_in_burn_layout() {
        // A Linear(2, 3) weight already transposed to burn's [in, out] = [2, 3]: its first axis is 2.
        let w = Tensor::<2>::zeros([2, 3], &device());
        linear_from_torch(TorchLinearWeight::new(w), Tensor::<1>::zeros([3], &device()));
    }
}
