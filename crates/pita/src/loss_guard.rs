//! Runtime guards for burn losses whose input convention differs from the PyTorch loss a port
//! usually starts from. Each checks the convention at run time, then computes burn's loss; the
//! plain form panics at the call site, the `try_` form returns [`Error::Check`].

use burn::nn::loss::BinaryCrossEntropyLoss;
use burn::tensor::{DType, Int, Tensor};

use crate::Error;

// burn's BinaryCrossEntropyLoss defaults to `logits = false` (PyTorch's `BCELoss`), and unlike
// PyTorch it does not check the range: a logit in (0, 1) gives a wrong finite loss, one outside
// gives NaN. The guard does the check PyTorch's BCELoss does. Logits that all happen to lie in
// [0, 1] still pass: only a comparison with the reference catches those.
// book:begin binary_cross_entropy
/// burn's BinaryCrossEntropyLoss, returning an error for inputs outside [0, 1] when `logits` is
/// false.
///
/// Cost: with `logits = false`, copies `input` to the host (a device sync, O(n)); then the loss.
pub fn try_binary_cross_entropy<const D: usize>(
    loss: &BinaryCrossEntropyLoss,
    input: Tensor<D>,
    targets: Tensor<D, Int>,
) -> Result<Tensor<1>, Error> {
    if !loss.logits {
        let dtype = input.dtype();
        let values = input.to_data().convert::<f64>().try_to_vec::<f64>().expect("f64 data");
        if let Some((index, &value)) = values.iter().enumerate().find(|(_, v)| !(0.0..=1.0).contains(*v)) {
            let value = if dtype == DType::F64 { value.to_string() } else { (value as f32).to_string() };
            let message = format!(
                "BinaryCrossEntropyLoss (logits = false) expects probabilities in [0, 1]; raw logits need .with_logits(true) (input element {index} is {value})"
            );
            return Err(Error::check("loss_guard::try_binary_cross_entropy", message));
        }
    }
    Ok(loss.forward(input, targets))
}

/// [`try_binary_cross_entropy`], panicking with its message. Same cost.
#[track_caller]
pub fn binary_cross_entropy<const D: usize>(
    loss: &BinaryCrossEntropyLoss,
    input: Tensor<D>,
    targets: Tensor<D, Int>,
) -> Tensor<1> {
    match try_binary_cross_entropy(loss, input, targets) {
        Ok(loss) => loss,
        Err(error) => panic!("{error}"), // here, not in a closure: the panic names the caller
    }
}
// book:end

// burn's `cross_entropy_with_logits` applies log_softmax over the last dim; PyTorch's
// `F.cross_entropy` uses dim 1. For inputs with more than two dims the target distributions of
// a PyTorch port lie along dim 1, so their sums over the last dim are not 1.
// book:begin cross_entropy_with_logits
/// burn's `cross_entropy_with_logits`, returning an error for logits and targets of different
/// shapes, or for targets that are not distributions over the last dim (sums within 1e-4 of 1).
///
/// Cost: copies `target_probs` to the host (a device sync, O(n)); then the loss.
pub fn try_cross_entropy_with_logits<const D: usize>(logits: Tensor<D>, target_probs: Tensor<D>) -> Result<Tensor<1>, Error> {
    let guard = "loss_guard::try_cross_entropy_with_logits";
    let dims = target_probs.dims();
    if logits.dims() != dims {
        let message = format!("logits and target_probs must have the same shape ({:?} and {dims:?})", logits.dims());
        return Err(Error::check(guard, message));
    }
    let classes = dims[D - 1].max(1);
    let values = target_probs.to_data().convert::<f32>().try_to_vec::<f32>().expect("f32 data");
    for (row, probs) in values.chunks(classes).enumerate() {
        let sum: f32 = probs.iter().sum();
        if (sum - 1.0).abs() > 1e-4 || sum.is_nan() {
            let message = format!(
                "cross_entropy_with_logits takes the class axis last: target_probs must sum to 1 over the last dim (row {row} of the last dim sums to {sum})"
            );
            return Err(Error::check(guard, message));
        }
    }
    Ok(burn::tensor::loss::cross_entropy_with_logits(logits, target_probs))
}

/// [`try_cross_entropy_with_logits`], panicking with its message. Same cost.
#[track_caller]
pub fn cross_entropy_with_logits<const D: usize>(logits: Tensor<D>, target_probs: Tensor<D>) -> Tensor<1> {
    match try_cross_entropy_with_logits(logits, target_probs) {
        Ok(loss) => loss,
        Err(error) => panic!("{error}"),
    }
}
// book:end

#[cfg(test)]
mod tests {
    use super::*;
    use burn::nn::loss::BinaryCrossEntropyLossConfig;
    use burn::tensor::Device;

    fn device() -> Device {
        Device::flex().autodiff()
    }

    fn floats<const D: usize>(values: &[f32], shape: [usize; D]) -> Tensor<D> {
        Tensor::<1>::from_floats(values, &device()).reshape(shape)
    }

    fn host_values<const D: usize>(tensor: &Tensor<D>) -> Vec<f32> {
        tensor.clone().into_data().convert::<f32>().try_to_vec::<f32>().unwrap()
    }

    fn targets() -> Tensor<1, Int> {
        Tensor::<1, Int>::from_ints([0, 1, 1], &device())
    }

    #[test]
    fn bce_accepts_probabilities_and_logits_with_logits_true() {
        let probs = BinaryCrossEntropyLossConfig::new().init(&device());
        let loss = binary_cross_entropy(&probs, floats(&[0.2, 0.7, 1.0], [3]), targets());
        assert!(host_values(&loss)[0].is_finite());
        let logits = BinaryCrossEntropyLossConfig::new().with_logits(true).init(&device());
        let loss = binary_cross_entropy(&logits, floats(&[-2.0, 0.5, 3.0], [3]), targets());
        assert!(host_values(&loss)[0].is_finite());
    }

    #[test]
    #[should_panic(expected = "expects probabilities in [0, 1]; raw logits need .with_logits(true) (input element 0 is -2")]
    fn bce_rejects_logits_without_logits_true() {
        let probs = BinaryCrossEntropyLossConfig::new().init(&device());
        binary_cross_entropy(&probs, floats(&[-2.0, 0.5, 3.0], [3]), targets());
    }

    #[test]
    fn the_result_forms_report_the_same_findings() {
        let probs = BinaryCrossEntropyLossConfig::new().init(&device());
        let error = try_binary_cross_entropy(&probs, floats(&[0.5, 1.5, 0.0], [3]), targets()).unwrap_err();
        assert!(error.to_string().ends_with("(input element 1 is 1.5)"), "{error}");
        let logits = floats(&[0.1, 0.2, 0.3, 0.4], [1, 2, 2]);
        let error = try_cross_entropy_with_logits(logits.clone(), floats(&[1.0, 0.25, 0.0, 0.75], [1, 2, 2])).unwrap_err();
        assert!(error.to_string().ends_with("(row 0 of the last dim sums to 1.25)"), "{error}");
        let error = try_cross_entropy_with_logits(logits, floats(&[0.5, 0.5], [1, 1, 2])).unwrap_err();
        assert!(error.to_string().starts_with("logits and target_probs must have the same shape"), "{error}");
    }

    #[test]
    fn cross_entropy_accepts_classes_last() {
        let logits = floats(&[0.1, 0.2, 0.3, 0.4, 0.5, 0.6], [1, 2, 3]);
        let targets = floats(&[1.0, 0.0, 0.0, 0.25, 0.5, 0.25], [1, 2, 3]);
        let ours = host_values(&cross_entropy_with_logits(logits.clone(), targets.clone()));
        let burns = host_values(&burn::tensor::loss::cross_entropy_with_logits(logits, targets));
        assert_eq!(ours, burns);
    }

    #[test]
    #[should_panic(expected = "target_probs must sum to 1 over the last dim (row 0 of the last dim sums to 1.25)")]
    fn cross_entropy_rejects_classes_in_dim_1() {
        // [N=1, C=2, L=2] with distributions along dim 1: (1, 0) and (0.25, 0.75).
        let logits = floats(&[0.1, 0.2, 0.3, 0.4], [1, 2, 2]);
        let targets = floats(&[1.0, 0.25, 0.0, 0.75], [1, 2, 2]);
        cross_entropy_with_logits(logits, targets);
    }
}
