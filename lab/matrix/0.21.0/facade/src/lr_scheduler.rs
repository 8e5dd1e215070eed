//! burn 0.22's learning-rate schedulers: `init()` gives a `ModuleLrScheduler` whose `step()` gives a
//! `ModuleLearningRate` (read with `base()`). burn 0.21's schedulers step to a plain rate through
//! the `LrScheduler` trait; this wraps each one (one group: the whole module).
pub use burn021::lr_scheduler::*;

#[doc(hidden)]
pub use burn021::lr_scheduler as upstream;
use burn021::optim::LearningRate;

/// 0.22's `ModuleLearningRate`: one rate for every parameter on 0.21.
#[derive(Clone, Copy, Debug)]
pub struct ModuleLearningRate(LearningRate);

impl ModuleLearningRate {
    pub fn base(&self) -> LearningRate {
        self.0
    }
}

impl From<LearningRate> for ModuleLearningRate {
    fn from(lr: LearningRate) -> Self {
        Self(lr)
    }
}

trait Step: Send + Sync {
    fn step(&mut self) -> LearningRate;
    fn clone_box(&self) -> Box<dyn Step>;
}

impl<S: upstream::LrScheduler + 'static> Step for S {
    fn step(&mut self) -> LearningRate {
        upstream::LrScheduler::step(self)
    }

    fn clone_box(&self) -> Box<dyn Step> {
        Box::new(self.clone())
    }
}

/// 0.22's `LrScheduler` (records without a backend parameter).
pub trait LrScheduler: Send + Sync {
    fn step(&mut self) -> LearningRate;
    fn to_record(&self) -> LrSchedulerRecord;
    fn load_record(&mut self, record: LrSchedulerRecord);
}

/// 0.22's `LrSchedulerRecord`: on 0.21, the scheduler's own state (a copy of it).
pub struct LrSchedulerRecord(Box<dyn Step>);

/// 0.22's `ModuleLrScheduler`: a 0.21 scheduler, stepped as 0.21 steps it.
pub struct ModuleLrScheduler(Box<dyn Step>);

impl Clone for ModuleLrScheduler {
    fn clone(&self) -> Self {
        Self(self.0.clone_box())
    }
}

impl ModuleLrScheduler {
    pub fn step(&mut self) -> ModuleLearningRate {
        ModuleLearningRate(self.0.step())
    }

    pub fn to_record(&self) -> LrSchedulerRecord {
        LrSchedulerRecord(self.0.clone_box())
    }

    pub fn load_record(self, record: LrSchedulerRecord) -> Self {
        Self(record.0)
    }
}

impl<S: upstream::LrScheduler + 'static> From<S> for ModuleLrScheduler {
    fn from(scheduler: S) -> Self {
        Self(Box::new(scheduler))
    }
}

/// 0.22's `module_lr_scheduler` path.
pub mod module_lr_scheduler {
    pub use super::{ModuleLearningRate, ModuleLrScheduler};
}

/// `pub struct Name(upstream)`: a 0.21 scheduler config whose `init` gives a [`ModuleLrScheduler`].
macro_rules! scheduler_config {
    ($module:ident, $name:ident, ($($arg:ident: $ty:ty),*), [$($with:ident: $with_ty:ty),*]) => {
        pub mod $module {
            pub use burn021::lr_scheduler::$module::*;

            pub struct $name(burn021::lr_scheduler::$module::$name);

            impl $name {
                pub fn new($($arg: $ty),*) -> Self {
                    Self(burn021::lr_scheduler::$module::$name::new($($arg),*))
                }

                $(pub fn $with(self, value: $with_ty) -> Self {
                    Self(self.0.$with(value))
                })*

                pub fn init(&self) -> Result<super::ModuleLrScheduler, String> {
                    Ok(super::ModuleLrScheduler(Box::new(self.0.init()?)))
                }
            }
        }
    };
}

scheduler_config!(cosine, CosineAnnealingLrSchedulerConfig, (initial_lr: f64, num_iters: usize), [with_min_lr: f64]);
scheduler_config!(step, StepLrSchedulerConfig, (initial_lr: f64, step_size: usize), [with_gamma: f64]);
