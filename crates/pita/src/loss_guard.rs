//! Runtime guards for burn losses whose input convention differs from the PyTorch loss a port
//! usually starts from. Each guard checks the convention at run time and panics at the call site.

use burn::nn::loss::BinaryCrossEntropyLoss;
use burn::tensor::{Int, Tensor};

/// The message [`binary_cross_entropy`] panics with; the book quotes it from a live run.
pub const NOT_PROBABILITIES: &str =
    "BinaryCrossEntropyLoss (logits = false) expects probabilities in [0, 1]; raw logits need .with_logits(true)";

/// The message [`cross_entropy_with_logits`] panics with; the book quotes it from a live run.
pub const CLASSES_NOT_LAST: &str =
    "cross_entropy_with_logits takes the class axis last: target_probs must sum to 1 over the last dim";

fn host_values<const D: usize>(tensor: &Tensor<D>) -> Vec<f32> {
    tensor.clone().into_data().convert::<f32>().try_to_vec::<f32>().expect("f32 data")
}

// burn's BinaryCrossEntropyLoss defaults to `logits = false` (PyTorch's `BCELoss`), and unlike
// PyTorch it does not check the range: a logit in (0, 1) gives a wrong finite loss, one outside
// gives NaN. The guard does the check PyTorch's BCELoss does. Logits that all happen to lie in
// [0, 1] still pass: only a comparison with the reference catches those.
// book:begin binary_cross_entropy
/// burn's BinaryCrossEntropyLoss, refusing inputs outside [0, 1] when `logits` is false.
#[track_caller]
pub fn binary_cross_entropy<const D: usize>(
    loss: &BinaryCrossEntropyLoss,
    input: Tensor<D>,
    targets: Tensor<D, Int>,
) -> Tensor<1> {
    if !loss.logits {
        let values = host_values(&input);
        if let Some((index, value)) = values.iter().enumerate().find(|(_, v)| !(0.0..=1.0).contains(*v)) {
            panic!("{NOT_PROBABILITIES} (input element {index} is {value})");
        }
    }
    loss.forward(input, targets)
}
// book:end

// burn's `cross_entropy_with_logits` applies log_softmax over the last dim; PyTorch's
// `F.cross_entropy` uses dim 1. For inputs with more than two dims the target distributions of
// a PyTorch port lie along dim 1, so their sums over the last dim are not 1.
// book:begin cross_entropy_with_logits
/// burn's `cross_entropy_with_logits`, refusing targets that are not distributions over the last dim.
#[track_caller]
pub fn cross_entropy_with_logits<const D: usize>(logits: Tensor<D>, target_probs: Tensor<D>) -> Tensor<1> {
    let dims = target_probs.dims();
    assert_eq!(logits.dims(), dims, "logits and target_probs must have the same shape");
    let classes = dims[D - 1];
    let values = host_values(&target_probs);
    for (row, probs) in values.chunks(classes).enumerate() {
        let sum: f32 = probs.iter().sum();
        assert!((sum - 1.0).abs() <= 1e-4, "{CLASSES_NOT_LAST} (row {row} of the last dim sums to {sum})");
    }
    burn::tensor::loss::cross_entropy_with_logits(logits, target_probs)
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
