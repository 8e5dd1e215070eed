//! p18a: burn-train's gradient accumulation (`grads_accumulation(n)`) sums the micro-batch
//! gradients; the PyTorch recipe divides each micro-batch loss by n, so its accumulated gradient is
//! the mean. A direct port steps with n times the gradient. The learner advances the LR scheduler
//! once per optimizer update, not per micro-batch.
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

use burn::data::dataloader::batcher::Batcher;
use burn::data::dataloader::DataLoaderBuilder;
use burn::data::dataset::InMemDataset;
use burn::lr_scheduler::constant::ConstantLr;
use burn::lr_scheduler::module_lr_scheduler::{ModuleLearningRate, ModuleLrScheduler};
use burn::lr_scheduler::{LrScheduler, LrSchedulerRecord};
use burn::module::Module;
use burn::nn::loss::{MseLoss, Reduction};
use burn::nn::Linear;
use burn::optim::{GradientsParams, ModuleOptimizer, SgdConfig};
use burn::tensor::{Device, Tensor};
use burn_train::logger::InMemoryMetricLogger;
use burn_train::{InferenceStep, Learner, RegressionOutput, SupervisedTraining, TrainOutput, TrainStep};
use pita_lab::dump_builder;
use pita_lab::inputs::{inputs_sha256, ramp};
use pita_lab::{device, linear, tensor, values};

// book:begin setup
const SAMPLES: usize = 6;
const BATCH: usize = 3; // micro-batches of 3 samples
const ACCUM: usize = 2; // micro-batches per optimizer step: one step on all 6 samples
const EPOCHS: usize = 1;
const LR: f64 = 0.1;
const WEIGHT: [f32; 3] = [0.5, -0.25, 0.75];
const BIAS: [f32; 1] = [0.1];
const TARGETS: [f32; SAMPLES] = [1.0, 0.0, -1.0, 2.0, 0.5, -0.5];
// book:end

/// What the learner handed the optimizer at each step: the learning rate and the gradients.
static APPLIED: Mutex<Vec<(f64, Tensor<2>, Tensor<1>)>> = Mutex::new(Vec::new());
/// Forward/backward passes (micro-batches) the learner ran in training.
static MICRO_BATCHES: AtomicUsize = AtomicUsize::new(0);

#[derive(Clone, Debug)]
struct Sample {
    x: [f32; 3],
    y: f32,
}

#[derive(Clone, Debug)]
struct Batch {
    x: Tensor<2>,
    y: Tensor<2>,
}

struct SampleBatcher;

impl Batcher<Sample, Batch> for SampleBatcher {
    fn batch(&self, items: Vec<Sample>, device: &Device) -> Batch {
        let x: Vec<f32> = items.iter().flat_map(|s| s.x).collect();
        let y: Vec<f32> = items.iter().map(|s| s.y).collect();
        Batch { x: tensor(&x, [items.len(), 3], device), y: tensor(&y, [items.len(), 1], device) }
    }
}

// book:begin model
#[derive(Module, Debug)]
struct Regressor {
    fc: Linear,
    #[module(skip)]
    loss_divisor: f64,
}

impl TrainStep for Regressor {
    type Input = Batch;
    type Output = RegressionOutput;

    fn step(&self, batch: Batch) -> TrainOutput<RegressionOutput> {
        MICRO_BATCHES.fetch_add(1, Ordering::SeqCst);
        let out = self.fc.forward(batch.x);
        let loss = MseLoss::new().forward(out.clone(), batch.y.clone(), Reduction::Mean);
        let grads = loss.clone().div_scalar(self.loss_divisor).backward();
        TrainOutput::new(self, grads, RegressionOutput::new(loss, out, batch.y))
    }

    // The default `optimize`, plus a record of what it was given.
    fn optimize(self, optim: &mut ModuleOptimizer, lr: ModuleLearningRate, grads: GradientsParams) -> Self {
        let weight_grad = grads.get::<2>(self.fc.weight.id).expect("weight.grad");
        let bias_grad = grads.get::<1>(self.fc.bias.as_ref().unwrap().id).expect("bias.grad");
        APPLIED.lock().unwrap().push((lr.base(), weight_grad, bias_grad));
        optim.step(lr, self, grads)
    }
}
// book:end

impl InferenceStep for Regressor {
    type Input = Batch;
    type Output = RegressionOutput;

    fn step(&self, batch: Batch) -> RegressionOutput {
        let out = self.fc.forward(batch.x);
        let loss = MseLoss::new().forward(out.clone(), batch.y.clone(), Reduction::Mean);
        RegressionOutput::new(loss, out, batch.y)
    }
}

/// A scheduler that counts its steps: how often the learner advanced the schedule.
#[derive(Clone)]
struct Counted {
    inner: ModuleLrScheduler,
    steps: Arc<AtomicUsize>,
}

impl LrScheduler for Counted {
    fn step(&mut self) -> f64 {
        self.steps.fetch_add(1, Ordering::SeqCst);
        self.inner.step().base()
    }

    fn to_record(&self) -> LrSchedulerRecord {
        self.inner.to_record()
    }

    fn load_record(&mut self, record: LrSchedulerRecord) {
        self.inner = self.inner.clone().load_record(record);
    }
}

fn samples(inputs: &[f32]) -> Vec<Sample> {
    TARGETS.iter().enumerate()
        .map(|(i, &y)| Sample { x: [inputs[3 * i], inputs[3 * i + 1], inputs[3 * i + 2]], y })
        .collect()
}

fn main() -> Result<(), pita::Error> {
    let args = pita_lab::args::Args::parse(&["port", "fixed", "lr-scaled"]);
    let device = device();
    let inputs = ramp(3 * SAMPLES, 0);
    let input_sha256 = inputs_sha256(&[&inputs, &TARGETS, &WEIGHT, &BIAS]);
    let train = DataLoaderBuilder::new(SampleBatcher).batch_size(BATCH).build(InMemDataset::new(samples(&inputs)));
    let valid = DataLoaderBuilder::new(SampleBatcher).batch_size(BATCH).build(InMemDataset::new(samples(&inputs)));
    let fc = linear(&WEIGHT, [3, 1], &BIAS, &device); // burn layout [in, out]
    let (model, lr) = match args.variant.as_str() {
        "port" => {
            // book:begin port
            let model = Regressor { fc, loss_divisor: 1.0 }; // backward on each micro-batch's mean loss
            // book:end
            (model, LR)
        }
        "fixed" => {
            // book:begin fixed
            let model = Regressor { fc, loss_divisor: ACCUM as f64 }; // like PyTorch's loss / ACCUM
            // book:end
            (model, LR)
        }
        "lr-scaled" => {
            // book:begin lr_scaled
            let (model, lr) = (Regressor { fc, loss_divisor: 1.0 }, LR / ACCUM as f64); // SGD: the step is lr·grad
            // book:end
            (model, lr)
        }
        _ => unreachable!("Args::parse accepts only the listed variants"),
    };
    let scheduler_steps = Arc::new(AtomicUsize::new(0));
    let scheduler = Counted { inner: ConstantLr::new(lr).into(), steps: scheduler_steps.clone() };
    let artifacts = args.out.join(format!("burn-{}.learner", args.variant)); // stays empty: no checkpoints, no file logs
    // book:begin learner
    let learner = Learner::new(model, SgdConfig::new().init(), scheduler);
    let result = SupervisedTraining::new(artifacts, train, valid)
        .num_epochs(EPOCHS)
        .grads_accumulation(ACCUM)
        .with_metric_logger(InMemoryMetricLogger::new())
        .with_application_logger(None)
        .launch(learner);
    // book:end
    let applied = APPLIED.lock().unwrap().clone();
    let (applied_lr, weight_grad, bias_grad) = applied.first().cloned().expect("one optimizer step");
    let (weight, bias) = (result.model.fc.weight.val(), result.model.fc.bias.as_ref().unwrap().val());
    let micro_batches = MICRO_BATCHES.load(Ordering::SeqCst);
    let scheduler_steps = scheduler_steps.load(Ordering::SeqCst);
    println!("micro-batches {micro_batches}, scheduler steps {scheduler_steps}, optimizer steps {}, lr {applied_lr}", applied.len());
    println!("applied weight.grad {:?} bias.grad {:?}", values(weight_grad.clone()), values(bias_grad.clone()));
    println!("weight after step {:?} bias {:?}", values(weight.clone()), values(bias.clone()));

    let mut dump = dump_builder("p18a", &args.variant, &input_sha256, &device)
        .metadata("batch_size", BATCH)
        .metadata("accumulation", ACCUM)
        .metadata("lr", applied_lr)
        .metadata("micro_batches", micro_batches)
        .metadata("scheduler_steps", scheduler_steps)
        .metadata("optimizer_steps", applied.len())
        .build()?;
    dump.tensor("weight.grad", weight_grad)?
        .tensor("bias.grad", bias_grad)?
        .tensor("weight.step1", weight)?
        .tensor("bias.step1", bias)?;
    dump.write(&args.out)?;
    Ok(())
}
