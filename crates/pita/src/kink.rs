//! Runtime guards for inputs that sit exactly on a kink (a clamp bound, the 0 of leaky_relu) or
//! on a tie of a maximum. There the derivative is not defined, and burn and PyTorch pick
//! different one-sided gradients, so a paired test fed such inputs diverges although both
//! forwards agree. The guards name the offending element instead.

use burn::tensor::Tensor;

/// The message [`assert_off_kinks`] panics with; the book quotes it from a live run.
pub const ON_KINK: &str = "input lies exactly on a kink: burn and PyTorch pick different gradients there";
/// The message [`assert_unique_max`] and [`assert_no_ties`] panic with.
pub const TIED: &str = "tied maximum: burn and PyTorch split its gradient differently";

fn host_values<const D: usize>(x: &Tensor<D>) -> Vec<f32> {
    x.to_data().convert::<f32>().try_to_vec::<f32>().expect("f32 data")
}

// book:begin assert_off_kinks
/// Panics if any element of `x` equals one of `kinks` (as f32).
#[track_caller]
pub fn assert_off_kinks<const D: usize>(x: &Tensor<D>, kinks: &[f64]) {
    let values = host_values(x);
    for &kink in kinks {
        if let Some(index) = values.iter().position(|&v| v == kink as f32) {
            panic!("{ON_KINK}: element {index} equals {kink}");
        }
    }
}
// book:end

// book:begin assert_unique_max
/// Panics if the maximum of `x` is attained by more than one element.
#[track_caller]
pub fn assert_unique_max<const D: usize>(x: &Tensor<D>) {
    let values = host_values(x);
    let max = values.iter().copied().fold(f32::NEG_INFINITY, f32::max);
    let at: Vec<usize> = (0..values.len()).filter(|&i| values[i] == max).collect();
    if at.len() > 1 {
        panic!("{TIED}: elements {at:?} all equal {max}");
    }
}

/// Panics if `a` and `b` are equal anywhere (a tie for `max_pair` / `min_pair`).
#[track_caller]
pub fn assert_no_ties<const D: usize>(a: &Tensor<D>, b: &Tensor<D>) {
    let (a, b) = (host_values(a), host_values(b));
    let at: Vec<usize> = (0..a.len()).filter(|&i| a[i] == b[i]).collect();
    if !at.is_empty() {
        panic!("{TIED}: elements {at:?} are equal in both operands");
    }
}
// book:end

#[cfg(test)]
mod tests {
    use super::*;
    use burn::tensor::Device;

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
    fn unique_max_passes_a_single_maximum() {
        assert_unique_max(&t([3.0, 1.0, 3.5]));
    }

    #[test]
    #[should_panic(expected = "tied maximum: burn and PyTorch split its gradient differently: elements [1, 2] all equal 3")]
    fn unique_max_rejects_a_tie() {
        assert_unique_max(&t([1.0, 3.0, 3.0]));
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
