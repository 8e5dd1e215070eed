//! GELU's gradient is a backend op (feature `autodiff`): a backend without its own
//! `gelu_backward` uses burn's default, the derivative of the tanh approximation, under the exact
//! (erf) forward. [`assert_exact_gelu_backward`] checks a device at startup; [`gelu_erf`] is the
//! fix, a GELU whose gradient autodiff derives from `erf`.

use burn::tensor::activation::gelu;
use burn::tensor::{Device, Tensor};

use crate::Error;

// book:begin gelu_erf
/// GELU written with `erf`: autodiff derives its gradient from erf's exact derivative instead of
/// calling the backend's `gelu_backward`.
pub fn gelu_erf<const D: usize>(x: Tensor<D>) -> Tensor<D> {
    x.clone() * ((x / core::f64::consts::SQRT_2).erf() + 1.0) * 0.5
}
// book:end

// book:begin assert_exact_gelu_backward
/// Returns an error unless `gelu`'s gradient on `device` (an autodiff device) equals the
/// gradient autodiff derives for [`gelu_erf`], at x = ±2 where the tanh-approximation derivative
/// is off by ~9e-4.
///
/// Cost: two backward passes over two elements and one host read; run it once, at startup.
pub fn check_exact_gelu_backward(device: &Device) -> Result<(), Error> {
    if !device.is_autodiff() {
        let message = format!("the GELU gradient check needs an autodiff device, got {device:?}");
        return Err(Error::check("gelu_grad::check_exact_gelu_backward", message));
    }
    let probe = || Tensor::<1>::from_floats([-2.0, 2.0], device).require_grad();
    let grad = |x: Tensor<1>, y: Tensor<1>| x.grad(&y.sum().backward()).expect("an autodiff device");
    let (x, x_erf) = (probe(), probe());
    let diff = (grad(x.clone(), gelu(x)) - grad(x_erf.clone(), gelu_erf(x_erf))).abs().max();
    let diff: f32 = diff.into_scalar();
    if diff <= 1e-5 {
        return Ok(());
    }
    let message = format!(
        "this backend's gelu_backward is not the exact GELU derivative (off by {diff:e} at x = ±2 on {device:?}); use gelu_erf"
    );
    Err(Error::check("gelu_grad::check_exact_gelu_backward", message))
}

/// Panics with [`check_exact_gelu_backward`]'s message unless `device`'s GELU gradient is the
/// exact one. Same cost.
#[track_caller]
pub fn assert_exact_gelu_backward(device: &Device) {
    if let Err(error) = check_exact_gelu_backward(device) {
        panic!("{error}");
    }
}
// book:end

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn flex_has_the_exact_derivative() {
        assert_exact_gelu_backward(&Device::flex().autodiff());
    }

    #[test]
    #[should_panic(expected = "this backend's gelu_backward is not the exact GELU derivative")]
    #[allow(deprecated)]
    fn ndarray_uses_the_tanh_derivative() {
        assert_exact_gelu_backward(&Device::ndarray().autodiff());
    }

    #[test]
    #[allow(deprecated)]
    fn the_result_form_reports_the_same_finding() {
        assert!(check_exact_gelu_backward(&Device::flex().autodiff()).is_ok());
        let error = check_exact_gelu_backward(&Device::ndarray().autodiff()).unwrap_err();
        assert!(error.to_string().ends_with("; use gelu_erf"), "{error}");
        assert!(check_exact_gelu_backward(&Device::flex()).is_err());
    }

    #[test]
    fn gelu_erf_matches_gelu_forward() {
        let x = Tensor::<1>::from_floats([-2.0, -0.5, 0.5, 2.0], &Device::flex());
        let diff: f32 = (gelu(x.clone()) - gelu_erf(x)).abs().max().into_scalar();
        assert!(diff <= 1e-6, "{diff}");
    }
}
