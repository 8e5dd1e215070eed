//! burn-train 0.22's supervised training over burn-train 0.21's, which already has its shape
//! (`Learner::new(model, optim, scheduler)`, `SupervisedTraining::new(..).launch(learner)`,
//! `TrainStep`/`InferenceStep`). What differs is 0.22's spelling of the model's side: its
//! `TrainStep::optimize` takes a `ModuleOptimizer` and a `ModuleLearningRate`, its outputs and
//! loaders name no backend. The model runs inside [`Trained`], a 0.21 training model that holds
//! the optimizer the learner steps with, so 0.21's loop (its epochs, its gradient accumulation, its
//! scheduler steps) is what runs.
pub use burn_train021::*;

use std::sync::{Arc, Mutex};

use burn::module::upstream as module021;
use burn::optim::{GradientsParams, ModuleOptimizer};
use burn::lr_scheduler::{LrScheduler, ModuleLearningRate};
use burn::tensor::Gradients;
use burn::Backend;

pub type RegressionOutput = burn_train021::RegressionOutput<Backend>;
pub type ClassificationOutput = burn_train021::ClassificationOutput<Backend>;

/// 0.22's `TrainOutput`: gradients as the facade's [`GradientsParams`].
pub struct TrainOutput<TO> {
    pub grads: GradientsParams,
    pub item: TO,
}

impl<TO> TrainOutput<TO> {
    pub fn new<M: module021::AutodiffModule<Backend>>(module: &M, grads: Gradients, item: TO) -> Self {
        Self { grads: GradientsParams::from_grads(grads, module), item }
    }
}

/// 0.22's `TrainStep`.
pub trait TrainStep: Sized {
    type Input: Send + 'static;
    type Output: ItemLazy + 'static;

    fn step(&self, item: Self::Input) -> TrainOutput<Self::Output>;

    fn optimize(self, optim: &mut ModuleOptimizer, lr: ModuleLearningRate, grads: GradientsParams) -> Self
    where
        Self: burn::module::Module,
    {
        optim.step(lr, self, grads)
    }
}

/// The model as 0.21's learner trains it: `model` and the optimizer its `optimize` steps with.
#[derive(Debug)]
pub struct Trained<M> {
    pub model: M,
    optim: Shared,
}

/// The one optimizer of a training, shared by [`Trained`] (which steps it) and 0.21's learner
/// (which holds an `Optimizer` it never calls: `TrainStep::optimize` is overridden).
#[derive(Clone)]
struct Shared(Arc<Mutex<ModuleOptimizer>>);

impl core::fmt::Debug for Shared {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.write_str("ModuleOptimizer")
    }
}

impl<M: Clone> Clone for Trained<M> {
    fn clone(&self) -> Self {
        Self { model: self.model.clone(), optim: self.optim.clone() }
    }
}

impl<M: core::fmt::Display> core::fmt::Display for Trained<M> {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        self.model.fmt(f)
    }
}

impl<M: module021::AutodiffModule<Backend, InnerModule = M>> module021::Module<Backend> for Trained<M> {
    type Record = <M as module021::Module<Backend>>::Record;

    fn collect_devices(&self, devices: module021::Devices<Backend>) -> module021::Devices<Backend> {
        self.model.collect_devices(devices)
    }
    fn fork(self, device: &burn::tensor::Device) -> Self {
        Self { model: self.model.fork(device), optim: self.optim }
    }
    fn to_device(self, device: &burn::tensor::Device) -> Self {
        Self { model: self.model.to_device(device), optim: self.optim }
    }
    fn visit<V: module021::ModuleVisitor<Backend>>(&self, visitor: &mut V) {
        self.model.visit(visitor)
    }
    fn map<Mapper: module021::ModuleMapper<Backend>>(self, mapper: &mut Mapper) -> Self {
        Self { model: self.model.map(mapper), optim: self.optim }
    }
    fn load_record(self, record: Self::Record) -> Self {
        Self { model: self.model.load_record(record), optim: self.optim }
    }
    fn into_record(self) -> Self::Record {
        self.model.into_record()
    }
}

impl<M: module021::AutodiffModule<Backend, InnerModule = M>> module021::AutodiffModule<Backend> for Trained<M> {
    type InnerModule = Trained<M>;

    fn valid(&self) -> Self {
        Self { model: self.model.valid(), optim: self.optim.clone() }
    }
    fn from_inner(module: Self) -> Self {
        Self { model: M::from_inner(module.model), optim: module.optim }
    }
}

impl<M> burn_train021::TrainStep for Trained<M>
where
    M: TrainStep + module021::AutodiffModule<Backend, InnerModule = M>,
{
    type Input = M::Input;
    type Output = M::Output;

    fn step(&self, item: Self::Input) -> burn_train021::TrainOutput<Self::Output> {
        let output = self.model.step(item);
        burn_train021::TrainOutput { grads: output.grads.into(), item: output.item }
    }

    fn optimize<B, O>(self, _optim: &mut O, lr: f64, grads: burn::optim::upstream::GradientsParams) -> Self
    where
        B: burn::tensor::backend::AutodiffBackend,
        O: burn::optim::upstream::Optimizer<Self, B>,
        Self: module021::AutodiffModule<B>,
    {
        let model = {
            let mut optim = self.optim.0.lock().expect("the optimizer lock");
            self.model.optimize(&mut optim, lr.into(), grads.into())
        };
        Self { model, optim: self.optim }
    }
}

impl<M: InferenceStep> InferenceStep for Trained<M> {
    type Input = M::Input;
    type Output = M::Output;

    fn step(&self, item: Self::Input) -> Self::Output {
        self.model.step(item)
    }
}

impl<M: module021::AutodiffModule<Backend, InnerModule = M>> burn::optim::upstream::Optimizer<Trained<M>, Backend> for Shared {
    type Record = ();

    fn step(&mut self, lr: f64, module: Trained<M>, grads: burn::optim::upstream::GradientsParams) -> Trained<M> {
        let model = self.0.lock().expect("the optimizer lock").step(lr, module.model, grads.into());
        Trained { model, optim: module.optim }
    }
    fn step_multi(&mut self, _lr: f64, _module: Trained<M>, _grads: burn::optim::upstream::MultiGradientsParams) -> Trained<M> {
        unreachable!("the lab's trainings run on one device")
    }
    fn to_record(&self) {}
    fn load_record(self, _record: ()) -> Self {
        self
    }
}

/// A 0.22 scheduler as 0.21's (its record: none, the lab's trainings keep no checkpoints).
struct Scheduler(Arc<Mutex<Box<dyn LrScheduler>>>);

impl Clone for Scheduler {
    fn clone(&self) -> Self {
        Self(self.0.clone())
    }
}

impl burn::lr_scheduler::upstream::LrScheduler for Scheduler {
    type Record<B: burn::tensor::backend::Backend> = ();

    fn step(&mut self) -> f64 {
        self.0.lock().expect("the scheduler lock").step()
    }
    fn to_record<B: burn::tensor::backend::Backend>(&self) {}
    fn load_record<B: burn::tensor::backend::Backend>(self, _record: ()) -> Self {
        self
    }
}

type Components<M> = LearningComponentsMarker<Backend, Scheduler, Trained<M>, Shared>;

/// What 0.21's learner needs of a model, in 0.22's terms: both steps, and a module that is its own
/// inference module (`Dispatch` is its own inner backend).
pub trait TrainedModel: TrainStep + InferenceStep + module021::AutodiffModule<Backend, InnerModule = Self> + core::fmt::Display + 'static {}

impl<M: TrainStep + InferenceStep + module021::AutodiffModule<Backend, InnerModule = M> + core::fmt::Display + 'static> TrainedModel for M {}

/// 0.22's `Learner`.
pub struct Learner<M>(burn_train021::Learner<Components<M>>)
where
    M: TrainedModel;

impl<M> Learner<M>
where
    M: TrainedModel,
{
    pub fn new<S: LrScheduler + 'static>(model: M, optim: ModuleOptimizer, scheduler: S) -> Self {
        let trained = Trained { model, optim: Shared(Arc::new(Mutex::new(optim))) };
        let optim = trained.optim.clone();
        Self(burn_train021::Learner::new(trained, optim, Scheduler(Arc::new(Mutex::new(Box::new(scheduler))))))
    }
}

/// 0.22's `LearningResult`: the trained model itself.
pub struct LearningResult<M> {
    pub model: M,
}

/// 0.22's `SupervisedTraining` (loaders that name no backend).
pub struct SupervisedTraining<M>(burn_train021::SupervisedTraining<Components<M>>)
where
    M: TrainedModel;

impl<M> SupervisedTraining<M>
where
    M: TrainedModel,
{
    pub fn new(
        directory: impl AsRef<std::path::Path>,
        train: Arc<dyn burn::data::dataloader::DataLoader<<M as TrainStep>::Input>>,
        valid: Arc<dyn burn::data::dataloader::DataLoader<<M as InferenceStep>::Input>>,
    ) -> Self {
        Self(burn_train021::SupervisedTraining::new(directory, train.upstream(), valid.upstream()))
    }

    pub fn num_epochs(self, num_epochs: usize) -> Self {
        Self(self.0.num_epochs(num_epochs))
    }

    pub fn grads_accumulation(self, accumulation: usize) -> Self {
        Self(self.0.grads_accumulation(accumulation))
    }

    pub fn with_metric_logger<L: logger::MetricLogger + 'static>(self, logger: L) -> Self {
        Self(self.0.with_metric_logger(logger))
    }

    pub fn with_application_logger(self, logger: Option<Box<dyn ApplicationLoggerInstaller>>) -> Self {
        Self(self.0.with_application_logger(logger))
    }

    pub fn launch(self, learner: Learner<M>) -> LearningResult<M> {
        LearningResult { model: self.0.launch(learner.0).model.model }
    }
}
