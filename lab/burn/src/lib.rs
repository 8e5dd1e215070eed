//! The lab's burn-side plumbing, shared by the experiment programs (`experiments/*/burn.rs`):
//!
//! - [`args`]: the command line every experiment program takes, `--variant NAME --out DIR`.
//! - [`inputs`]: the deterministic input ramp and the hash both sides record.
//! - the device every experiment runs on, and small tensor helpers.
//!
//! Nothing here is for users' ports; that is the `pita` crate.

pub mod args;
pub mod inputs;

use burn::module::Param;
use burn::nn::Linear;
use burn::tensor::{Device, Tensor, TensorData};

/// The device every experiment runs on: Flex (CPU) wrapped in Autodiff.
pub fn device() -> Device {
    Device::flex().autodiff()
}

/// How dumps name the backend, e.g. `Autodiff<Flex>`; derived from the device, not typed.
pub fn backend_name(device: &Device) -> String {
    format!("{device:?}")
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
