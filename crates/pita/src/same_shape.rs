//! Runtime guard: a loss whose prediction and target must have the same shape.
//!
//! burn broadcasts size-1 dims of same-rank tensors, and `MseLoss` subtracts without checking
//! shapes, so a `[B, 1]` prediction against a `[1, B]` target (a `[B]` target after
//! `unsqueeze()`, which prepends) silently averages a `[B, B]` matrix.

use burn::nn::loss::{MseLoss, Reduction};
use burn::tensor::Tensor;

use crate::Error;

// book:begin mse_loss
/// What [`mse_loss`] panics with; the book quotes it from a live run.
pub const SHAPES_DIFFER: &str = "prediction and target shapes differ: the loss would broadcast them";

/// burn's mean `MseLoss`, refusing a prediction and a target of different shapes.
///
/// Cost: compares shapes (free); then the loss.
#[track_caller]
pub fn mse_loss<const D: usize>(prediction: Tensor<D>, target: Tensor<D>) -> Tensor<1> {
    assert_eq!(prediction.dims(), target.dims(), "{SHAPES_DIFFER}");
    MseLoss::new().forward(prediction, target, Reduction::Mean)
}
// book:end

/// [`mse_loss`] returning [`Error::Check`] instead of panicking when the shapes differ.
///
/// Cost: compares shapes only (free); then the loss.
pub fn try_mse_loss<const D: usize>(prediction: Tensor<D>, target: Tensor<D>) -> Result<Tensor<1>, Error> {
    let (p, t) = (prediction.dims(), target.dims());
    if p != t {
        return Err(Error::check("same_shape::try_mse_loss", format!("{SHAPES_DIFFER} ({p:?} and {t:?})")));
    }
    Ok(MseLoss::new().forward(prediction, target, Reduction::Mean))
}

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
    fn the_result_form_names_both_shapes() {
        let error = try_mse_loss(column([1.0, 2.0], [2, 1]), column([1.0, 4.0], [1, 2])).unwrap_err();
        assert_eq!(error.to_string(), "prediction and target shapes differ: the loss would broadcast them ([2, 1] and [1, 2])");
        assert!(try_mse_loss(column([1.0, 2.0], [2, 1]), column([1.0, 4.0], [2, 1])).is_ok());
    }

    #[test]
    #[should_panic(expected = "prediction and target shapes differ")]
    fn rejects_a_broadcasting_target() {
        mse_loss(column([1.0, 2.0], [2, 1]), column([1.0, 4.0], [1, 2]));
    }
}
