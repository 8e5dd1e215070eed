//! Runtime guards for inputs that sit exactly on a kink (a clamp bound, the 0 of leaky_relu) or
//! on a tie of a maximum. There the derivative is not defined, and burn and PyTorch pick
//! different one-sided gradients, so a paired test fed such inputs diverges although both
//! forwards agree. The guards name the offending element instead.
//!
//! Each copies the tensor to the host: a device sync and O(n). They are for tests and for the
//! inputs of a paired comparison, not for every training step.

use burn::tensor::{Bool, DType, Tensor};

use crate::Error;

// book:begin assert_off_kinks
/// Returns an error if any element of `x` equals one of `kinks`, compared in `x`'s dtype (the
/// kink rounded to it, as burn's `equal_elem` does).
///
/// Cost: one comparison on the device per kink and a host copy of its result, O(n) each.
pub fn check_off_kinks<const D: usize>(x: &Tensor<D>, kinks: &[f64]) -> Result<(), Error> {
    for &kink in kinks {
        let on_kink: Tensor<D, Bool> = x.clone().equal_elem(kink);
        let flags = on_kink.into_data().convert::<bool>().try_to_vec::<bool>().expect("bool data");
        if let Some(index) = flags.iter().position(|&on| on) {
            let message = format!(
                "input lies exactly on a kink: burn and PyTorch pick different gradients there: element {index} equals {kink}"
            );
            return Err(Error::check("kink::check_off_kinks", message));
        }
    }
    Ok(())
}

/// Panics with [`check_off_kinks`]'s message if any element of `x` equals one of `kinks`.
/// Same cost.
#[track_caller]
pub fn assert_off_kinks<const D: usize>(x: &Tensor<D>, kinks: &[f64]) {
    if let Err(error) = check_off_kinks(x, kinks) {
        panic!("{error}");
    }
}
// book:end

// book:begin assert_unique_max
/// What [`assert_unique_max`] and [`assert_no_ties`] panic with; the book quotes it from a live run.
pub const TIED: &str = "tied maximum: burn and PyTorch split its gradient differently";

/// `x`'s values on the host, exactly (as f64), and a printer showing one in `x`'s own dtype.
fn host_values<const D: usize>(x: &Tensor<D>) -> (Vec<f64>, impl Fn(f64) -> String) {
    let dtype = x.dtype();
    let values = x.to_data().convert::<f64>().try_to_vec::<f64>().expect("f64 data");
    (values, move |v: f64| if dtype == DType::F64 { v.to_string() } else { (v as f32).to_string() })
}

/// Returns an error if the maximum of `x` is attained by more than one element.
///
/// Cost: copies `x` to the host, a device sync and O(n).
pub fn check_unique_max<const D: usize>(x: &Tensor<D>) -> Result<(), Error> {
    let (values, show) = host_values(x);
    let max = values.iter().copied().fold(f64::NEG_INFINITY, f64::max);
    let at: Vec<usize> = (0..values.len()).filter(|&i| values[i] == max).collect();
    if at.len() > 1 {
        return Err(Error::check("kink::check_unique_max", format!("{TIED}: elements {at:?} all equal {}", show(max))));
    }
    Ok(())
}

/// Panics with [`check_unique_max`]'s message if the maximum of `x` is tied. Same cost.
#[track_caller]
pub fn assert_unique_max<const D: usize>(x: &Tensor<D>) {
    if let Err(error) = check_unique_max(x) {
        panic!("{error}");
    }
}

/// Returns an error if `a` and `b` are equal anywhere (a tie for `max_pair` / `min_pair`).
///
/// Cost: copies both to the host, a device sync and O(n).
pub fn check_no_ties<const D: usize>(a: &Tensor<D>, b: &Tensor<D>) -> Result<(), Error> {
    let ((a, _), (b, _)) = (host_values(a), host_values(b));
    let at: Vec<usize> = (0..a.len().min(b.len())).filter(|&i| a[i] == b[i]).collect();
    if !at.is_empty() {
        return Err(Error::check("kink::check_no_ties", format!("{TIED}: elements {at:?} are equal in both operands")));
    }
    Ok(())
}

/// Panics with [`check_no_ties`]'s message if `a` and `b` are equal anywhere. Same cost.
#[track_caller]
pub fn assert_no_ties<const D: usize>(a: &Tensor<D>, b: &Tensor<D>) {
    if let Err(error) = check_no_ties(a, b) {
        panic!("{error}");
    }
}
// book:end

#[cfg(test)]
mod tests {
    use super::*;
    use burn::tensor::{Device, TensorData};

    fn t(values: [f32; 3]) -> Tensor<1> {
        Tensor::<1>::from_floats(values, &Device::flex())
    }

    #[test]
    fn off_kinks_passes_values_beside_the_kink() {
        assert_off_kinks(&t([-0.25, 0.25, 1.0]), &[0.0, 0.5]);
    }

    #[test]
    #[should_panic(expected = "input lies exactly on a kink: burn and PyTorch pick different gradients there: element 1 equals 0.5")]
    fn off_kinks_rejects_a_value_on_the_kink() {
        assert_off_kinks(&t([-0.25, 0.5, 1.0]), &[0.0, 0.5]);
    }

    #[test]
    fn off_kinks_compares_in_the_tensors_dtype() {
        // 0.1 is no f32: the f32 nearest it is on the kink 0.1 as a clamp bound in f32 sees it.
        let error = check_off_kinks(&t([0.1, 0.2, 0.3]), &[0.1]).unwrap_err();
        assert!(error.to_string().ends_with("element 0 equals 0.1"), "{error}");
        assert!(check_off_kinks(&t([-0.0, 1.0, 2.0]), &[0.5]).is_ok());
    }

    #[test]
    fn unique_max_passes_a_single_maximum() {
        assert_unique_max(&t([3.0, 1.0, 3.5]));
    }

    #[test]
    #[should_panic(expected = "tied maximum: burn and PyTorch split its gradient differently: elements [1, 2] all equal 3")]
    fn unique_max_rejects_a_tie() {
        assert_unique_max(&t([1.0, 3.0, 3.0]));
    }

    #[test]
    fn unique_max_prints_the_value_in_its_dtype() {
        let error = check_unique_max(&t([0.1, 0.1, 0.0])).unwrap_err();
        assert!(error.to_string().ends_with("elements [0, 1] all equal 0.1"), "{error}");
        // Distinct in f64, equal once rounded to f32: no tie.
        let f64s = Tensor::<1>::from_data(TensorData::new(vec![1.0f64, 1.0 + 1e-12, 0.0], [3]), (&Device::flex(), DType::F64));
        assert!(check_unique_max(&f64s).is_ok());
    }

    #[test]
    fn no_ties_passes_distinct_operands() {
        assert_no_ties(&t([1.0, 2.0, 3.0]), &t([2.0, 1.0, 4.0]));
    }

    #[test]
    #[should_panic(expected = "elements [0] are equal in both operands")]
    fn no_ties_rejects_an_equal_pair() {
        assert_no_ties(&t([2.0, 1.0, 3.0]), &t([2.0, 3.0, 4.0]));
    }
}
