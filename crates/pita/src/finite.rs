//! Runtime guard: stop at the first tensor that holds inf or NaN, instead of training on it.

use burn::tensor::Tensor;

/// The words [`assert_finite`] panics with; the book quotes the message from a live run.
pub const NOT_FINITE: &str = "holds non-finite values";

// A NaN gradient does not stop burn: the optimizer writes it into the weights and every later
// step is NaN too. Checking the tensors you care about right after they are computed names the
// first one that went wrong.
// book:begin assert_finite
/// Panics if `tensor` holds inf or NaN, naming `what`, how many and the first flat index.
#[track_caller]
pub fn assert_finite<const D: usize>(tensor: &Tensor<D>, what: &str) {
    let values = tensor.to_data().convert::<f32>().try_to_vec::<f32>().expect("f32 data");
    let bad: Vec<usize> = (0..values.len()).filter(|&i| !values[i].is_finite()).collect();
    if let Some(&first) = bad.first() {
        panic!(
            "{what} {NOT_FINITE}: {} of {}, first at flat index {first} ({})",
            bad.len(),
            values.len(),
            values[first]
        );
    }
}
// book:end

#[cfg(test)]
mod tests {
    use super::*;
    use burn::tensor::Device;

    fn tensor(values: [f32; 3]) -> Tensor<1> {
        Tensor::<1>::from_floats(values, &Device::flex())
    }

    #[test]
    fn accepts_finite_values() {
        assert_finite(&tensor([1.0, -2.0, 0.0]), "x");
    }

    #[test]
    #[should_panic(expected = "x.grad holds non-finite values: 2 of 3, first at flat index 1 (NaN)")]
    fn names_the_first_non_finite_value() {
        assert_finite(&tensor([1.0, f32::NAN, f32::INFINITY]), "x.grad");
    }
}
