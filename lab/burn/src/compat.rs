//! Per-version shims: the one place where the lab's burn programs meet the differences between the
//! burn versions the matrix builds (`lab/matrix/versions.toml`). Experiments call these functions
//! and never test the version themselves, so one experiment's source builds on every version.
//!
//! Each shim is chosen by `#[cfg(burn_minor = "..")]` (set by build.rs from the burn that Cargo.lock
//! resolved). Where the burn API a pitfall is about does not exist in a version, the shim calls
//! [`api_absent`], and the matrix shows that cell as "n/a", naming the API.

/// The exit status of a program whose pitfall's burn API does not exist in the burn it was built
/// against: distinct from success (0), an error (1), a usage error (2) and a panic (101).
pub const API_ABSENT_EXIT: i32 = 64;

/// The prefix of the one stderr line [`api_absent`] prints; the line goes on with the API's path.
pub const API_ABSENT_PREFIX: &str = "burn api absent: ";

/// Ends the program: `api` (a path as burn spells it, `burn::tensor::ops::CoordinateTransformMode`)
/// does not exist in this burn. Prints `burn api absent: <api> (burn <version>)` on stderr.
pub fn api_absent(api: &str) -> ! {
    eprintln!("{API_ABSENT_PREFIX}{api} (burn {})", crate::BURN_VERSION);
    std::process::exit(API_ABSENT_EXIT)
}

/// The NdArray CPU backend's device (Autodiff not included): the backend some pitfalls are about
/// (integer division, integer mean and GELU's gradient run a variant on it). burn 0.23 removed
/// NdArray from `burn` (Flex replaces it).
#[cfg(not(burn_minor = "23"))]
pub fn ndarray_device() -> burn::tensor::Device {
    #[allow(deprecated)] // burn-ndarray is deprecated in 0.22 in favour of Flex
    burn::tensor::Device::ndarray()
}

/// The NdArray CPU backend's device: absent from burn 0.23, so the variant is "n/a".
#[cfg(burn_minor = "23")]
pub fn ndarray_device() -> burn::tensor::Device {
    api_absent("burn::backend::NdArray")
}

/// Whether interpolate options align corners: a field up to burn 0.22, a method reading the
/// `coordinate_transform` (`CoordinateTransformMode::AlignCorners`) from 0.23 on.
pub fn interpolate_align_corners(options: &burn::tensor::ops::InterpolateOptions) -> bool {
    #[cfg(not(burn_minor = "23"))]
    return options.align_corners;
    #[cfg(burn_minor = "23")]
    return options.align_corners();
}

/// What a store's `get_all_tensors` holds for each name: burn-store's `TensorSnapshot` on burn
/// 0.21, burn-pack's tensor on 0.22, burn-store's lazily read `StoreTensor` from 0.23 on.
#[cfg(burn_minor = "21")]
pub type StoredTensor = burn::store::TensorSnapshot;
/// What a store's `get_all_tensors` holds for each name (see the other cfgs' doc).
#[cfg(burn_minor = "22")]
pub type StoredTensor = burn::store::burn_pack::Tensor;
/// What a store's `get_all_tensors` holds for each name (see the other cfgs' doc).
#[cfg(burn_minor = "23")]
pub type StoredTensor = burn::store::StoreTensor;

/// The data of a tensor a store read (a `.pt` or `.safetensors` file), whatever its type there.
pub fn stored_tensor_data(tensor: &StoredTensor) -> burn::tensor::TensorData {
    #[cfg(not(burn_minor = "23"))]
    return burn::store::bridge::to_data(tensor).expect("tensor data");
    #[cfg(burn_minor = "23")]
    return tensor.to_data().expect("tensor data");
}

/// What `ModuleSnapshot::collect` gives for each parameter: burn-store's `TensorSnapshot` on burn
/// 0.21, burn-pack's tensor from 0.22 on.
#[cfg(burn_minor = "21")]
pub type CollectedTensor = burn::store::TensorSnapshot;
/// What `ModuleSnapshot::collect` gives for each parameter (see the other cfg's doc).
#[cfg(not(burn_minor = "21"))]
pub type CollectedTensor = burn::store::burn_pack::Tensor;

/// A collected parameter's path (`lstm.input_gate.input_transform.weight`): `full_path()` on burn
/// 0.21, the `name` field from 0.22 on.
pub fn collected_tensor_path(tensor: &CollectedTensor) -> String {
    #[cfg(burn_minor = "21")]
    return tensor.full_path();
    #[cfg(not(burn_minor = "21"))]
    return tensor.name.clone();
}

/// A coordinate mapping of interpolation, named as burn 0.23's
/// `burn::tensor::ops::CoordinateTransformMode` spells it: the lab's own enum, so that a program
/// naming a mapping builds on every version ([`interpolate_with_coordinate_mode`] sets it).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CoordinateMode {
    /// `(o + 0.5) · in/out − 0.5`: PyTorch's `align_corners=False`.
    HalfPixel,
    /// ONNX's `pytorch_half_pixel`: `HalfPixel`, except `0` when the output axis has one pixel.
    PytorchHalfPixel,
    /// `o · (in − 1)/(out − 1)`: PyTorch's `align_corners=True`.
    AlignCorners,
    /// `o · in/out`.
    Asymmetric,
}

/// `options` with its coordinate mapping set to `mode`: `with_coordinate_transform` from burn 0.23
/// on. Up to 0.22 the `align_corners` flag is the only setting, and it expresses `AlignCorners`
/// (true) and `HalfPixel` (false); the other mappings are `api_absent` there.
pub fn interpolate_with_coordinate_mode(
    options: burn::tensor::ops::InterpolateOptions,
    mode: CoordinateMode,
) -> burn::tensor::ops::InterpolateOptions {
    #[cfg(not(burn_minor = "23"))]
    {
        let mut options = options;
        options.align_corners = match mode {
            CoordinateMode::AlignCorners => true,
            CoordinateMode::HalfPixel => false,
            CoordinateMode::PytorchHalfPixel | CoordinateMode::Asymmetric => api_absent("burn::tensor::ops::CoordinateTransformMode"),
        };
        options
    }
    #[cfg(burn_minor = "23")]
    return options.with_coordinate_transform(match mode {
        CoordinateMode::HalfPixel => burn::tensor::ops::CoordinateTransformMode::HalfPixel,
        CoordinateMode::PytorchHalfPixel => burn::tensor::ops::CoordinateTransformMode::PytorchHalfPixel,
        CoordinateMode::AlignCorners => burn::tensor::ops::CoordinateTransformMode::AlignCorners,
        CoordinateMode::Asymmetric => burn::tensor::ops::CoordinateTransformMode::Asymmetric,
    });
}

/// The coordinate mapping `options` holds, as burn 0.23's `CoordinateTransformMode` names it (its
/// `Debug` form from 0.23 on; up to 0.22, `AlignCorners` or `HalfPixel` from `align_corners`).
pub fn interpolate_coordinate_mode_name(options: &burn::tensor::ops::InterpolateOptions) -> String {
    #[cfg(not(burn_minor = "23"))]
    return if interpolate_align_corners(options) { "AlignCorners" } else { "HalfPixel" }.to_string();
    #[cfg(burn_minor = "23")]
    return format!("{:?}", options.coordinate_transform);
}

/// burn-nn's `InterpolateMode::NearestExact` (PyTorch's `mode="nearest-exact"`): there from burn
/// 0.22 on; 0.21's burn-nn has no such mode, so the program is `api_absent` there.
pub fn nearest_exact_mode() -> burn::nn::interpolate::InterpolateMode {
    #[cfg(burn_minor = "21")]
    api_absent("burn::nn::interpolate::InterpolateMode::NearestExact");
    #[cfg(not(burn_minor = "21"))]
    return burn::nn::interpolate::InterpolateMode::NearestExact;
}
