//! Gradient clipping by norm (feature `optim`), the way `torch.nn.utils.clip_grad_norm_` does it:
//! one L2 norm over every parameter's gradient together. burn's `GradientClipping::Norm` clips
//! each parameter tensor by its own norm, which changes the direction of the whole update, not
//! only its length. [`clip_grad_norm`] is the fix; [`assert_no_per_tensor_norm_clipping`] guards
//! an optimizer against burn's per-tensor clipping.

use burn::module::{Module, ModuleVisitor, Param};
use burn::optim::{GradientsParams, ModuleOptimizer};
use burn::grad_clipping::GradientClipping;
use burn::tensor::Tensor;

use crate::Error;

// book:begin clip_grad_norm
/// Scales every gradient in `grads` by `min(1, max_norm / (total_norm + 1e-6))`, where
/// `total_norm` is the L2 norm of all of `module`'s gradients together (as
/// `torch.nn.utils.clip_grad_norm_`). Returns the clipped gradients and `total_norm`.
///
/// Cost: one reduction per parameter on the device and a host read of each (a device sync
/// per parameter), then one scaling per parameter; once per optimizer step.
pub fn clip_grad_norm<M: Module>(module: &M, mut grads: GradientsParams, max_norm: f32) -> (GradientsParams, f32) {
    let mut squares = SumOfSquares { grads: &grads, sum: 0.0 };
    module.visit(&mut squares);
    let total_norm = squares.sum.sqrt() as f32;
    let coef = (max_norm / (total_norm + 1e-6)).min(1.0);
    module.visit(&mut Scale { grads: &mut grads, coef });
    (grads, total_norm)
}
// book:end

struct SumOfSquares<'a> {
    grads: &'a GradientsParams,
    sum: f64,
}

impl ModuleVisitor for SumOfSquares<'_> {
    fn visit_float<const D: usize>(&mut self, param: &Param<Tensor<D>>) {
        if let Some(grad) = self.grads.get::<D>(param.id) {
            let square: f32 = grad.square().sum().into_scalar();
            self.sum += square as f64;
        }
    }
}

struct Scale<'a> {
    grads: &'a mut GradientsParams,
    coef: f32,
}

impl ModuleVisitor for Scale<'_> {
    fn visit_float<const D: usize>(&mut self, param: &Param<Tensor<D>>) {
        if let Some(grad) = self.grads.remove::<D>(param.id) {
            self.grads.register(param.id, grad.mul_scalar(self.coef));
        }
    }
}

// book:begin assert_no_per_tensor_norm_clipping
/// Returns an error if `optim` was configured with `GradientClipping::Norm`, which a port of
/// `clip_grad_norm_` must not use; clip with [`clip_grad_norm`] before `step` instead.
///
/// Cost: reads the optimizer's config (free); run it once, where the optimizer is built.
pub fn check_no_per_tensor_norm_clipping(optim: &ModuleOptimizer) -> Result<(), Error> {
    if let Some(GradientClipping::Norm(max_norm)) = optim.grad_clipping() {
        let message = format!(
            "GradientClipping::Norm clips each parameter tensor by its own norm, not by the global norm (max_norm {max_norm}); use pita::clip_norm::clip_grad_norm before step"
        );
        return Err(Error::check("clip_norm::check_no_per_tensor_norm_clipping", message));
    }
    Ok(())
}

/// Panics with [`check_no_per_tensor_norm_clipping`]'s message if `optim` clips per tensor.
/// Same cost.
#[track_caller]
pub fn assert_no_per_tensor_norm_clipping(optim: &ModuleOptimizer) {
    if let Err(error) = check_no_per_tensor_norm_clipping(optim) {
        panic!("{error}");
    }
}
// book:end

#[cfg(test)]
mod tests {
    use super::*;
    use burn::grad_clipping::GradientClippingConfig;
    use burn::optim::SgdConfig;
    use burn::tensor::Device;

    #[derive(Module, Debug)]
    struct Two {
        a: Param<Tensor<1>>,
        b: Param<Tensor<1>>,
    }

    fn grads_of(values_a: [f32; 2], values_b: [f32; 2]) -> (Two, GradientsParams) {
        let device = Device::flex().autodiff();
        let two = Two {
            a: Param::from_tensor(Tensor::<1>::zeros([2], &device)),
            b: Param::from_tensor(Tensor::<1>::zeros([2], &device)),
        };
        let loss = (two.a.val() * Tensor::<1>::from_floats(values_a, &device)).sum()
            + (two.b.val() * Tensor::<1>::from_floats(values_b, &device)).sum();
        let grads = GradientsParams::from_grads(loss.backward(), &two);
        (two, grads)
    }

    fn values(grads: &GradientsParams, param: &Param<Tensor<1>>) -> Vec<f32> {
        grads.get::<1>(param.id).unwrap().into_data().try_to_vec::<f32>().unwrap()
    }

    #[test]
    fn scales_all_gradients_by_one_global_norm() {
        let (two, grads) = grads_of([0.0, 3.0], [4.0, 0.0]); // global norm 5
        let (grads, norm) = clip_grad_norm(&two, grads, 1.0);
        assert!((norm - 5.0).abs() < 1e-6);
        let (a, b) = (values(&grads, &two.a), values(&grads, &two.b));
        assert!((a[1] - 0.6).abs() < 1e-6 && (b[0] - 0.8).abs() < 1e-6, "{a:?} {b:?}");
    }

    #[test]
    fn leaves_small_gradients_alone() {
        let (two, grads) = grads_of([0.0, 0.3], [0.4, 0.0]);
        let (grads, _) = clip_grad_norm(&two, grads, 1.0);
        assert_eq!(values(&grads, &two.a), vec![0.0, 0.3]);
    }

    #[test]
    #[should_panic(expected = "GradientClipping::Norm clips each parameter tensor by its own norm")]
    fn rejects_norm_clipping_in_the_optimizer() {
        let optim = SgdConfig::new().with_gradient_clipping(Some(GradientClippingConfig::Norm(1.0))).init();
        assert_no_per_tensor_norm_clipping(&optim);
    }

    #[test]
    fn accepts_an_optimizer_without_clipping() {
        assert_no_per_tensor_norm_clipping(&SgdConfig::new().init());
        assert!(check_no_per_tensor_norm_clipping(&SgdConfig::new().init()).is_ok());
    }

    #[test]
    fn the_result_form_names_max_norm() {
        let optim = SgdConfig::new().with_gradient_clipping(Some(GradientClippingConfig::Norm(1.0))).init();
        let error = check_no_per_tensor_norm_clipping(&optim).unwrap_err();
        assert!(error.to_string().contains("(max_norm 1); use pita::clip_norm::clip_grad_norm before step"), "{error}");
    }
}
