//! Binary cross-entropy with float targets. burn's `BinaryCrossEntropyLoss::forward` takes its
//! targets as `Tensor<D, Int>`, so the soft targets of label smoothing, distillation or mixup
//! (0.9, a teacher's 0.7) do not fit; a port that casts them with `.int()` truncates every one
//! in (0, 1) to 0 and trains on other labels, without an error.
//!
//! - the fix, [`binary_cross_entropy_with_logits`]: PyTorch's
//!   `F.binary_cross_entropy_with_logits(logits, targets)` (mean reduction) with float targets;
//! - the guard, [`hard_targets`]: the cast to `Int` burn's loss needs, refusing targets that are
//!   not exactly 0 or 1 instead of truncating them.
//!
//! Each panics at the call site; the `try_` forms return [`Error::Check`].

use burn::tensor::activation::log_sigmoid;
use burn::tensor::{DType, Int, Tensor};

use crate::Error;

// book:begin binary_cross_entropy_with_logits
/// PyTorch's `F.binary_cross_entropy_with_logits(logits, targets)` with its default mean
/// reduction, for float targets in [0, 1]: `mean((1 − t)·x − log σ(x))`. `log_sigmoid` is burn's
/// log-sum-exp form, as stable for large |x| as PyTorch's. An error when the shapes differ
/// (PyTorch refuses that too).
///
/// Cost: free beyond the loss itself (reads shapes only).
pub fn try_binary_cross_entropy_with_logits<const D: usize>(logits: Tensor<D>, targets: Tensor<D>) -> Result<Tensor<1>, Error> {
    if logits.dims() != targets.dims() {
        let message = format!("logits and targets must have the same shape ({:?} and {:?})", logits.dims(), targets.dims());
        return Err(Error::check("bce_targets::try_binary_cross_entropy_with_logits", message));
    }
    let per_element = (targets.neg() + 1.0) * logits.clone() - log_sigmoid(logits);
    Ok(per_element.mean())
}

/// [`try_binary_cross_entropy_with_logits`], panicking with its message. Same cost.
#[track_caller]
pub fn binary_cross_entropy_with_logits<const D: usize>(logits: Tensor<D>, targets: Tensor<D>) -> Tensor<1> {
    match try_binary_cross_entropy_with_logits(logits, targets) {
        Ok(loss) => loss,
        Err(error) => panic!("{error}"), // here, not in a closure: the panic names the caller
    }
}
// book:end

// book:begin hard_targets
/// The targets as the `Tensor<D, Int>` burn's `BinaryCrossEntropyLoss::forward` takes, or an
/// error naming the first target that is not exactly 0 or 1: `.int()` would truncate it (0.9
/// becomes 0) and the loss would train on other labels.
///
/// Cost: copies `targets` to the host (a device sync, O(n)); then the cast.
pub fn try_hard_targets<const D: usize>(targets: Tensor<D>) -> Result<Tensor<D, Int>, Error> {
    let dtype = targets.dtype();
    let values = targets.to_data().convert::<f64>().try_to_vec::<f64>().expect("f64 data");
    if let Some((index, &value)) = values.iter().enumerate().find(|(_, v)| **v != 0.0 && **v != 1.0) {
        let value = if dtype == DType::F64 { value.to_string() } else { (value as f32).to_string() };
        let message = format!(
            "BinaryCrossEntropyLoss takes Int targets; target element {index} is {value}, which .int() truncates. \
             Soft targets need bce_targets::binary_cross_entropy_with_logits"
        );
        return Err(Error::check("bce_targets::try_hard_targets", message));
    }
    Ok(targets.int())
}

/// [`try_hard_targets`], panicking with its message. Same cost.
#[track_caller]
pub fn hard_targets<const D: usize>(targets: Tensor<D>) -> Tensor<D, Int> {
    match try_hard_targets(targets) {
        Ok(targets) => targets,
        Err(error) => panic!("{error}"),
    }
}
// book:end

#[cfg(test)]
mod tests {
    use super::*;
    use burn::nn::loss::BinaryCrossEntropyLossConfig;
    use burn::tensor::Device;

    fn floats(values: &[f32]) -> Tensor<1> {
        Tensor::<1>::from_floats(values, &Device::flex())
    }

    fn value(tensor: Tensor<1>) -> f32 {
        tensor.into_data().convert::<f32>().try_to_vec::<f32>().unwrap()[0]
    }

    #[test]
    fn hard_targets_agree_with_burns_loss() {
        let logits = floats(&[-2.0, 0.5, 3.0]);
        let targets = floats(&[0.0, 1.0, 1.0]);
        let burn = BinaryCrossEntropyLossConfig::new().with_logits(true).init(&Device::flex());
        let expected = value(burn.forward(logits.clone(), hard_targets(targets.clone())));
        let got = value(binary_cross_entropy_with_logits(logits, targets));
        assert!((expected - got).abs() <= 1e-6, "{expected} vs {got}");
    }

    #[test]
    fn soft_target_loss_is_the_formula() {
        // t = 0.9, x = 0: (1 − t)·0 − log σ(0) = ln 2, whatever t is.
        let at_zero = value(binary_cross_entropy_with_logits(floats(&[0.0]), floats(&[0.9])));
        assert!((at_zero - std::f32::consts::LN_2).abs() <= 1e-6, "{at_zero}");
        // large logits stay finite: x = 100, t = 0.9 gives 0.1·100 − log σ(100) ≈ 10.
        let large = value(binary_cross_entropy_with_logits(floats(&[100.0]), floats(&[0.9])));
        assert!((large - 10.0).abs() <= 1e-4, "{large}");
        let negative = value(binary_cross_entropy_with_logits(floats(&[-100.0]), floats(&[0.9])));
        assert!((negative - 90.0).abs() <= 1e-3, "{negative}");
    }

    #[test]
    fn shapes_must_agree() {
        let error = try_binary_cross_entropy_with_logits(floats(&[0.0, 1.0]), floats(&[1.0])).unwrap_err();
        assert!(error.to_string().contains("same shape ([2] and [1])"), "{error}");
    }

    #[test]
    fn soft_targets_are_refused_not_truncated() {
        let error = try_hard_targets(floats(&[0.0, 1.0, 0.9])).unwrap_err();
        assert!(error.to_string().contains("target element 2 is 0.9"), "{error}");
        assert!(try_hard_targets(floats(&[1.0, 0.0])).is_ok());
    }
}
