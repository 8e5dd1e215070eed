//! Runtime guard: a loss whose prediction and target must have the same shape.
//!
//! burn broadcasts size-1 dims of same-rank tensors, and `MseLoss` subtracts without checking
//! shapes, so a `[B, 1]` prediction against a `[1, B]` target (a `[B]` target after
//! `unsqueeze()`, which prepends) silently averages a `[B, B]` matrix.

use burn::nn::loss::{MseLoss, Reduction};
use burn::tensor::Tensor;

/// The message [`mse_loss`] panics with; the book quotes it from a live run.
pub const SHAPES_DIFFER: &str = "prediction and target shapes differ: the loss would broadcast them";

// book:begin mse_loss
/// burn's mean `MseLoss`, refusing a prediction and a target of different shapes.
#[track_caller]
pub fn mse_loss<const D: usize>(prediction: Tensor<D>, target: Tensor<D>) -> Tensor<1> {
    assert_eq!(prediction.dims(), target.dims(), "{SHAPES_DIFFER}");
    MseLoss::new().forward(prediction, target, Reduction::Mean)
}
// book:end

#[cfg(test)]
mod tests {
    use super::*;
    use burn::tensor::{Device, TensorData};

    fn column(values: [f32; 2], shape: [usize; 2]) -> Tensor<2> {
        Tensor::from_data(TensorData::new(values.to_vec(), shape), &Device::flex())
    }

    #[test]
    fn accepts_equal_shapes() {
        let loss = mse_loss(column([1.0, 2.0], [2, 1]), column([1.0, 4.0], [2, 1]));
        assert_eq!(loss.into_data().try_to_vec::<f32>().unwrap(), vec![2.0]);
    }

    #[test]
    #[should_panic(expected = "prediction and target shapes differ")]
    fn rejects_a_broadcasting_target() {
        mse_loss(column([1.0, 2.0], [2, 1]), column([1.0, 4.0], [1, 2]));
    }
}
