//! Runtime guard: stop at the first tensor that holds inf or NaN, instead of training on it.

use burn::tensor::Tensor;

use crate::Error;

// A NaN gradient does not stop burn: the optimizer writes it into the weights and every later
// step is NaN too. Checking the tensors you care about right after they are computed names the
// first one that went wrong.
// book:begin assert_finite
/// Returns an error if `tensor` holds inf or NaN, naming `what`, how many and the first flat
/// index. Works for every float dtype (values are read as f64, exactly).
///
/// Cost: copies the tensor to the host, a device sync and O(n).
pub fn check_finite<const D: usize>(tensor: &Tensor<D>, what: &str) -> Result<(), Error> {
    let values = tensor.to_data().convert::<f64>().try_to_vec::<f64>().expect("f64 data");
    let bad: Vec<usize> = (0..values.len()).filter(|&i| !values[i].is_finite()).collect();
    match bad.first() {
        Some(&first) => Err(Error::check(
            "finite::check_finite",
            format!("{what} holds non-finite values: {} of {}, first at flat index {first} ({})", bad.len(), values.len(), values[first]),
        )),
        None => Ok(()),
    }
}

/// Panics if `tensor` holds inf or NaN, with [`check_finite`]'s message. Same cost.
#[track_caller]
pub fn assert_finite<const D: usize>(tensor: &Tensor<D>, what: &str) {
    if let Err(error) = check_finite(tensor, what) {
        panic!("{error}");
    }
}
// book:end

#[cfg(test)]
mod tests {
    use super::*;
    use burn::tensor::{DType, Device, TensorData};

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

    #[test]
    fn f64_values_beyond_f32_are_finite() {
        let big = Tensor::<1>::from_data(TensorData::new(vec![1e300f64, -1e300], [2]), (&Device::flex(), DType::F64));
        assert!(check_finite(&big, "x").is_ok());
        let error = check_finite(&tensor([f32::INFINITY, 0.0, 0.0]), "y").unwrap_err();
        assert!(matches!(error, Error::Check { guard: "finite::check_finite", .. }));
        assert_eq!(error.to_string(), "y holds non-finite values: 1 of 3, first at flat index 0 (inf)");
    }
}
