//! Runtime guard for backward (feature `autodiff`): a loss must be reduced to one value before
//! `backward`, which seeds the root with ones of its shape.

use burn::tensor::{Gradients, Tensor};

use crate::Error;

// burn seeds backward with ones of the root's shape, so a per-sample loss silently backpropagates
// its sum. Taking `Tensor<1>` rejects a `[B, 1]` loss at compile time; the assertion rejects a
// `[B]` loss at run time. `sum()` and `mean()` both pass: the guard cannot tell them apart.
// book:begin backward_scalar
/// What [`backward_scalar`] panics with; the book quotes it from a live run.
pub const NOT_REDUCED: &str = "loss must be reduced (mean/sum) before backward";

/// Only accepts a loss that was reduced to one value.
///
/// Cost: reads the shape (free); then the backward pass.
#[track_caller]
pub fn backward_scalar(loss: Tensor<1>) -> Gradients {
    assert_eq!(loss.dims(), [1], "{NOT_REDUCED}");
    loss.backward()
}
// book:end

/// [`backward_scalar`] returning [`Error::Check`] instead of panicking, when the loss holds more
/// than one value.
///
/// Cost: the check reads the shape only (free); then the backward pass.
pub fn try_backward_scalar(loss: Tensor<1>) -> Result<Gradients, Error> {
    let dims = loss.dims();
    if dims != [1] {
        return Err(Error::check("guard::try_backward_scalar", format!("{NOT_REDUCED} (its shape is {dims:?})")));
    }
    Ok(loss.backward())
}

#[cfg(test)]
mod tests {
    use super::*;
    use burn::tensor::Device;

    fn leaf(values: [f32; 4]) -> Tensor<1> {
        Tensor::<1>::from_floats(values, &Device::flex().autodiff()).require_grad()
    }

    #[test]
    fn accepts_a_reduced_loss() {
        let x = leaf([1.0, 2.0, 3.0, 4.0]);
        let grads = backward_scalar(x.clone().mean());
        let grad = x.grad(&grads).unwrap().into_data().try_to_vec::<f32>().unwrap();
        assert_eq!(grad, vec![0.25; 4]);
        assert!(try_backward_scalar(x.sum()).is_ok());
    }

    #[test]
    #[should_panic(expected = "loss must be reduced (mean/sum) before backward")]
    fn rejects_a_per_sample_loss() {
        backward_scalar(leaf([1.0, 2.0, 3.0, 4.0]).powi_scalar(2));
    }

    #[test]
    fn the_result_form_names_the_shape() {
        let Err(error) = try_backward_scalar(leaf([1.0, 2.0, 3.0, 4.0]).powi_scalar(2)) else { panic!("accepted") };
        assert_eq!(error.to_string(), "loss must be reduced (mean/sum) before backward (its shape is [4])");
    }
}
