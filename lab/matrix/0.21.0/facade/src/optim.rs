//! burn 0.22's optimizers: `XConfig::init()` gives a `ModuleOptimizer`, one type for every
//! optimizer and module, whose `step` is generic over the module. burn 0.21's `init` gives an
//! `OptimizerAdaptor<O, M, B>` fixed to one module type; this module keeps 0.21's per-tensor step
//! (`SimpleOptimizer::step`, its state per parameter, gradient clipping) and its mapping over the
//! module (0.21's `SimpleOptimizerMapper`), with the optimizer's type erased.
pub use burn021::optim::*;

#[doc(hidden)]
pub use burn021::optim as upstream;

use std::collections::HashMap;

use burn021::grad_clipping::{GradientClipping, GradientClippingConfig};
use burn021::module::{Param, ParamId};
use burn021::optim::record::AdaptorRecord;

use crate::module::ModuleMapper;
use crate::tensor::Tensor;
use crate::Backend;

type Inner = <Backend as burn021::tensor::backend::AutodiffBackend>::InnerBackend;

/// One optimizer's per-tensor step, its type erased. Tensors come flattened to rank 1: every
/// optimizer 0.21's configs build updates element by element (norms, where used, are the same).
trait ErasedStep: Send {
    fn step(&mut self, lr: f64, id: ParamId, tensor: burn021::tensor::Tensor<Inner, 1>, grad: burn021::tensor::Tensor<Inner, 1>)
        -> burn021::tensor::Tensor<Inner, 1>;
}

struct Stepper<O: burn021::optim::SimpleOptimizer<Inner>> {
    optim: O,
    records: HashMap<ParamId, AdaptorRecord<O, Backend>>,
}

impl<O: burn021::optim::SimpleOptimizer<Inner> + 'static> ErasedStep for Stepper<O> {
    fn step(&mut self, lr: f64, id: ParamId, tensor: burn021::tensor::Tensor<Inner, 1>, grad: burn021::tensor::Tensor<Inner, 1>)
        -> burn021::tensor::Tensor<Inner, 1> {
        let device = tensor.device();
        let (key, record) = self.records.remove_entry(&id).unzip();
        let state = record.map(|record| O::to_device(record.into_state(), &device));
        let (tensor, state) = self.optim.step(lr, tensor, grad, state);
        if let Some(state) = state {
            self.records.insert(key.unwrap_or(id), AdaptorRecord::from_state(state));
        }
        tensor
    }
}

/// burn 0.22's `ModuleOptimizer`.
pub struct ModuleOptimizer {
    stepper: Box<dyn ErasedStep>,
    grad_clipping: Option<GradientClipping>,
}

impl<O: burn021::optim::SimpleOptimizer<Inner> + 'static> From<O> for ModuleOptimizer {
    fn from(optim: O) -> Self {
        Self { stepper: Box::new(Stepper { optim, records: HashMap::new() }), grad_clipping: None }
    }
}

impl ModuleOptimizer {
    pub fn has_gradient_clipping(&self) -> bool {
        self.grad_clipping.is_some()
    }

    pub fn grad_clipping(&self) -> Option<&GradientClipping> {
        self.grad_clipping.as_ref()
    }

    pub fn with_grad_clipping(mut self, gradient_clipping: GradientClipping) -> Self {
        self.grad_clipping = Some(gradient_clipping);
        self
    }

    /// One step of every parameter of `module` that has a gradient in `grads`.
    pub fn step<M: crate::module::Module>(&mut self, lr: impl Into<crate::lr_scheduler::ModuleLearningRate>, module: M, mut grads: GradientsParams) -> M {
        let mut mapper = StepMapper { optim: self, grads: &mut grads.0, lr: lr.into().base() };
        crate::module::Module::map(module, &mut mapper)
    }
}

struct StepMapper<'a> {
    optim: &'a mut ModuleOptimizer,
    grads: &'a mut burn021::optim::GradientsParams,
    lr: f64,
}

impl ModuleMapper for StepMapper<'_> {
    fn map_float<const D: usize>(&mut self, param: Param<Tensor<D>>) -> Param<Tensor<D>> {
        let (id, tensor, mapper) = param.consume();
        let Some(grad) = self.grads.remove::<Inner, D>(id) else {
            return Param::from_mapped_value(id, tensor, mapper);
        };
        let is_require_grad = tensor.is_require_grad();
        let grad = match &self.optim.grad_clipping {
            Some(clipping) => clipping.clip_gradient(grad),
            None => grad,
        };
        let shape = tensor.shape();
        let flat = |t: burn021::tensor::Tensor<Inner, D>| t.reshape([shape.num_elements()]);
        let updated = self.optim.stepper.step(self.lr, id, flat(tensor.inner()), flat(grad));
        let mut tensor = Tensor::from_inner(updated.reshape(shape));
        if is_require_grad {
            tensor = tensor.require_grad();
        }
        Param::from_mapped_value(id, tensor, mapper)
    }
}

/// `pub struct Name(upstream)`: a 0.21 optimizer config whose `init` gives a [`ModuleOptimizer`];
/// each builder listed is 0.21's, forwarded; it serialises as the 0.21 config does.
macro_rules! optimizer_config {
    ($name:ident, $clipping:ident, [$($with:ident: $ty:ty),* $(,)?]) => {
        #[derive(Clone, Debug, serde::Serialize, serde::Deserialize)]
        pub struct $name {
            #[serde(flatten)]
            upstream: burn021::optim::$name,
            #[serde(skip)]
            clipping: Option<GradientClippingConfig>,
        }

        impl $name {
            #[allow(clippy::new_without_default)]
            pub fn new() -> Self {
                Self { upstream: burn021::optim::$name::new(), clipping: None }
            }

            pub fn $clipping(self, clipping: Option<GradientClippingConfig>) -> Self {
                Self { upstream: self.upstream.$clipping(clipping.clone()), clipping }
            }

            $(pub fn $with(self, value: $ty) -> Self {
                Self { upstream: self.upstream.$with(value), clipping: self.clipping }
            })*

            pub fn init(&self) -> ModuleOptimizer {
                let optim = ModuleOptimizer::from(Build::build_optimizer(&self.upstream));
                match &self.clipping {
                    Some(config) => optim.with_grad_clipping(config.init()),
                    None => optim,
                }
            }
        }

        impl burn021::config::Config for $name {}

        impl core::fmt::Display for $name {
            fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
                write!(f, "{}", serde_json::to_string(&self.upstream).map_err(|_| core::fmt::Error)?)
            }
        }
    };
}

use burn021::optim::decay::WeightDecayConfig;
use burn021::optim::momentum::MomentumConfig;

optimizer_config!(SgdConfig, with_gradient_clipping, [with_weight_decay: Option<WeightDecayConfig>, with_momentum: Option<MomentumConfig>]);
optimizer_config!(AdamConfig, with_grad_clipping, [with_beta_1: f32, with_beta_2: f32, with_epsilon: f32, with_amsgrad: bool,
    with_weight_decay: Option<WeightDecayConfig>]);
optimizer_config!(AdamWConfig, with_grad_clipping, [with_beta_1: f32, with_beta_2: f32, with_epsilon: f32, with_weight_decay: f32,
    with_cautious_weight_decay: bool, with_amsgrad: bool]);
optimizer_config!(RmsPropConfig, with_grad_clipping, [with_alpha: f32, with_momentum: f32, with_epsilon: f32, with_centered: bool,
    with_weight_decay: Option<WeightDecayConfig>]);
optimizer_config!(AdaGradConfig, with_grad_clipping, [with_lr_decay: f64, with_epsilon: f32, with_weight_decay: Option<WeightDecayConfig>]);

/// The 0.21 optimizer a config builds (0.21's `build`, generic over the backend for SGD only).
trait Build {
    type Optimizer: burn021::optim::SimpleOptimizer<Inner> + 'static;
    fn build_optimizer(&self) -> Self::Optimizer;
}

macro_rules! build {
    ($config:ident => $optimizer:ty, $($turbofish:tt)*) => {
        impl Build for burn021::optim::$config {
            type Optimizer = $optimizer;
            fn build_optimizer(&self) -> $optimizer {
                self.build$($turbofish)*()
            }
        }
    };
}

build!(SgdConfig => burn021::optim::Sgd<Inner>, ::<Inner>);
build!(AdamConfig => burn021::optim::Adam,);
build!(AdamWConfig => burn021::optim::AdamW,);
build!(RmsPropConfig => burn021::optim::RmsProp,);
build!(AdaGradConfig => burn021::optim::AdaGrad,);

/// burn 0.22's `GradientsParams`: 0.21's, whose methods name the backend (`get::<B, D>`).
#[derive(Default, Debug)]
pub struct GradientsParams(pub(crate) burn021::optim::GradientsParams);

impl From<burn021::optim::GradientsParams> for GradientsParams {
    fn from(grads: burn021::optim::GradientsParams) -> Self {
        Self(grads)
    }
}

impl From<GradientsParams> for burn021::optim::GradientsParams {
    fn from(grads: GradientsParams) -> Self {
        grads.0
    }
}

impl GradientsParams {
    pub fn new() -> Self {
        Self::default()
    }

    pub fn from_grads<M: burn021::module::AutodiffModule<Backend>>(grads: crate::tensor::Gradients, module: &M) -> Self {
        Self(burn021::optim::GradientsParams::from_grads(grads, module))
    }

    pub fn from_module<M: burn021::module::AutodiffModule<Backend>>(grads: &mut crate::tensor::Gradients, module: &M) -> Self {
        Self(burn021::optim::GradientsParams::from_module(grads, module))
    }

    pub fn get<const D: usize>(&self, id: ParamId) -> Option<Tensor<D>> {
        self.0.get::<Inner, D>(id)
    }

    pub fn remove<const D: usize>(&mut self, id: ParamId) -> Option<Tensor<D>> {
        self.0.remove::<Inner, D>(id)
    }

    pub fn register<const D: usize>(&mut self, id: ParamId, value: Tensor<D>) {
        self.0.register::<Inner, D>(id, value)
    }

    pub fn len(&self) -> usize {
        self.0.len()
    }

    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }
}

/// burn 0.22's `GradientsAccumulator`: 0.21's, over the facade's [`GradientsParams`].
pub struct GradientsAccumulator<M>(burn021::optim::GradientsAccumulator<M>);

impl<M> Default for GradientsAccumulator<M> {
    fn default() -> Self {
        Self(Default::default())
    }
}

impl<M: burn021::module::AutodiffModule<Backend>> GradientsAccumulator<M> {
    pub fn new() -> Self {
        Self::default()
    }

    pub fn accumulate(&mut self, module: &M, grads: GradientsParams) {
        self.0.accumulate(module, grads.0)
    }

    pub fn grads(&mut self) -> GradientsParams {
        GradientsParams(self.0.grads())
    }
}
