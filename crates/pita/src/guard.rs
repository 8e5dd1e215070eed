//! Runtime guards that turn a silent divergence into a panic at the call site.

use burn::tensor::{Gradients, Tensor};

/// The message [`backward_scalar`] panics with; the book quotes it from a live run.
pub const NOT_REDUCED: &str = "loss must be reduced (mean/sum) before backward";

// burn seeds backward with ones of the root's shape, so a per-sample loss silently backpropagates
// its sum. Taking `Tensor<1>` rejects a `[B, 1]` loss at compile time; the assertion rejects a
// `[B]` loss at run time. `sum()` and `mean()` both pass: the guard cannot tell them apart.
// book:begin backward_scalar
/// Only accepts a loss that was reduced to one value.
#[track_caller]
pub fn backward_scalar(loss: Tensor<1>) -> Gradients {
    assert_eq!(loss.dims(), [1], "{NOT_REDUCED}");
    loss.backward()
}
// book:end

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
    }

    #[test]
    #[should_panic(expected = "loss must be reduced (mean/sum) before backward")]
    fn rejects_a_per_sample_loss() {
        backward_scalar(leaf([1.0, 2.0, 3.0, 4.0]).powi_scalar(2));
    }
}
