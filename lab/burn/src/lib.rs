//! The lab's burn-side plumbing, shared by the experiment programs (`experiments/*/burn.rs`):
//!
//! - [`args`]: the command line every experiment program takes, `--variant NAME --out DIR`.
//! - [`compat`]: the per-version shims (the matrix builds every experiment on several burns).
//! - [`inputs`]: the deterministic input ramp and the hash both sides record.
//! - [`BURN_VERSION`]: the burn version Cargo.lock resolved, and [`dump_builder`], which starts
//!   every experiment's dump with it and the rest of the lab's provenance.
//! - [`loaded`]: which parameters a load left at their initial values.
//! - the device every experiment runs on, and small tensor helpers.
//!
//! Nothing here is for users' ports; that is the `pita` crate.

pub mod args;
pub mod compat;
pub mod inputs;
pub mod loaded;

use burn::module::Param;
use burn::nn::Linear;
use burn::tensor::{Device, Tensor, TensorData};
use pita::dump::{Dump, DumpBuilder};

/// The burn version this workspace's Cargo.lock resolved (read by build.rs): the exact burn the
/// experiments run, which their dumps record as `framework_version`.
pub const BURN_VERSION: &str = env!("PITA_LAB_BURN_VERSION");

/// The builder of an experiment's dump: `experiment`, `variant`, `input_sha256`, the exact
/// `framework_version` ([`BURN_VERSION`]) and the backend of `device`, the device the program ran
/// on (the tensors dumped, gradients say, may live off its autodiff wrapper).
pub fn dump_builder(experiment: &str, variant: &str, input_sha256: &str, device: &Device) -> DumpBuilder {
    Dump::builder()
        .experiment(experiment)
        .variant(variant)
        .input_sha256(input_sha256)
        .framework_version(BURN_VERSION)
        .device(device)
}

/// The device every experiment runs on: Flex (CPU) wrapped in Autodiff.
pub fn device() -> Device {
    Device::flex().autodiff()
}

/// A float tensor of `shape` holding `values` (row-major).
pub fn tensor<const D: usize>(values: &[f32], shape: [usize; D], device: &Device) -> Tensor<D> {
    Tensor::from_data(TensorData::new(values.to_vec(), shape), device)
}

/// A burn Linear with the given weight, already in burn's `[d_input, d_output]` layout.
pub fn linear(weight: &[f32], shape: [usize; 2], bias: &[f32], device: &Device) -> Linear {
    Linear {
        weight: Param::from_tensor(tensor(weight, shape, device)),
        bias: Some(Param::from_tensor(tensor(bias, [bias.len()], device))),
    }
}

/// Row-major values of a tensor, for printing.
pub fn values<const D: usize>(tensor: Tensor<D>) -> Vec<f32> {
    tensor.into_data().convert::<f32>().try_to_vec::<f32>().expect("f32 data")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn burn_version_is_the_locked_one() {
        assert!(BURN_VERSION.starts_with("0.22."), "{BURN_VERSION}");
    }

    #[test]
    fn dump_builder_records_the_lab_provenance() {
        let dump = dump_builder("p00", "mean", "ab", &device()).metadata("batch_size", 4).build().unwrap();
        let meta = dump.metadata();
        assert_eq!(meta["framework_version"], BURN_VERSION);
        assert_eq!(meta["backend"], "Autodiff<Flex>");
        assert_eq!((meta["experiment"].as_str(), meta["variant"].as_str()), ("p00", "mean"));
        assert_eq!(dump.stem().as_deref(), Some("burn-mean"));
    }
}
