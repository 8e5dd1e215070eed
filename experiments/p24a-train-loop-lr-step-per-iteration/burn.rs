//! p24a: burn-train's `Learner` steps the LR scheduler once per optimizer step (an iteration),
//! never per epoch. A PyTorch schedule stepped once per epoch, ported with its epoch counts,
//! decays iterations-per-epoch times too fast. Under gradient accumulation the scheduler steps
//! once per optimizer update, not per micro-batch.
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

use burn::data::dataloader::batcher::Batcher;
use burn::data::dataloader::DataLoaderBuilder;
use burn::data::dataset::InMemDataset;
use burn::lr_scheduler::module_lr_scheduler::{ModuleLearningRate, ModuleLrScheduler};
use burn::lr_scheduler::step::StepLrSchedulerConfig;
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
const SAMPLES: usize = 8;
const BATCH: usize = 2; // SAMPLES / BATCH = 4 iterations per epoch
const EPOCHS: usize = 4;
const LR: f64 = 0.1;
const STEP_EPOCHS: usize = 2; // PyTorch StepLR(step_size=2), stepped once per epoch
const GAMMA: f64 = 0.5;
const ACCUM: usize = 2; // the `accum*` variants: micro-batches per optimizer step
const WEIGHT: [f32; 3] = [0.5, -0.25, 0.75];
const BIAS: [f32; 1] = [0.1];
const TARGETS: [f32; SAMPLES] = [1.0, 0.0, -1.0, 2.0, 0.5, -0.5, 1.5, -1.0];
// book:end

/// The learning rate of every optimizer step, in order, as the learner handed it to the optimizer.
static APPLIED_LR: Mutex<Vec<f64>> = Mutex::new(Vec::new());
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
    loss_divisor: f64, // 1 without accumulation; ACCUM to average micro-batches like PyTorch
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

    // The default `optimize`, plus a record of the learning rate it was given.
    fn optimize(self, optim: &mut ModuleOptimizer, lr: ModuleLearningRate, grads: GradientsParams) -> Self {
        APPLIED_LR.lock().unwrap().push(lr.base());
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
    let args = pita_lab::args::Args::parse(&["port", "fixed", "accum", "accum-micro"]);
    let device = device();
    let inputs = ramp(3 * SAMPLES, 0);
    let input_sha256 = inputs_sha256(&[&inputs, &TARGETS, &WEIGHT, &BIAS]);
    let train = DataLoaderBuilder::new(SampleBatcher).batch_size(BATCH).build(InMemDataset::new(samples(&inputs)));
    let valid = DataLoaderBuilder::new(SampleBatcher).batch_size(BATCH).build(InMemDataset::new(samples(&inputs)));
    let iterations_per_epoch = train.num_items().div_ceil(BATCH);
    let accumulation = if args.variant.starts_with("accum") { ACCUM } else { 1 };
    let step_size = match args.variant.as_str() {
        "port" => {
            // book:begin port
            let step_size = STEP_EPOCHS; // as in PyTorch's StepLR(step_size=2)
            // book:end
            step_size
        }
        "fixed" => {
            // book:begin fixed
            // burn-train steps the scheduler once per optimizer step: count the epochs in them.
            let step_size = STEP_EPOCHS * iterations_per_epoch;
            // book:end
            step_size
        }
        "accum" => {
            // book:begin accum
            // ACCUM micro-batches per optimizer step: iterations_per_epoch / ACCUM steps an epoch.
            let step_size = STEP_EPOCHS * iterations_per_epoch / ACCUM;
            // book:end
            step_size
        }
        "accum-micro" => {
            // book:begin accum_micro
            // counted in micro-batches, as if the scheduler stepped on each of them
            let step_size = STEP_EPOCHS * iterations_per_epoch;
            // book:end
            step_size
        }
        _ => unreachable!("Args::parse accepts only the listed variants"),
    };
    let model = Regressor { fc: linear(&WEIGHT, [3, 1], &BIAS, &device), loss_divisor: accumulation as f64 };
    // book:begin scheduler
    let scheduler = StepLrSchedulerConfig::new(LR, step_size).with_gamma(GAMMA).init().expect("step_size > 0");
    // book:end
    let scheduler_steps = Arc::new(AtomicUsize::new(0));
    let scheduler = Counted { inner: scheduler, steps: scheduler_steps.clone() };
    let artifacts = args.out.join(format!("burn-{}.learner", args.variant)); // stays empty: no checkpoints, no file logs
    // book:begin learner
    let learner = Learner::new(model, SgdConfig::new().init(), scheduler);
    let training = SupervisedTraining::new(artifacts, train, valid)
        .num_epochs(EPOCHS)
        .with_metric_logger(InMemoryMetricLogger::new())
        .with_application_logger(None);
    let training = if accumulation > 1 { training.grads_accumulation(accumulation) } else { training };
    let result = training.launch(learner);
    // book:end
    let lrs = APPLIED_LR.lock().unwrap().clone();
    let (weight, bias) = (result.model.fc.weight.val(), result.model.fc.bias.as_ref().unwrap().val());
    let micro_batches = MICRO_BATCHES.load(Ordering::SeqCst);
    let scheduler_steps = scheduler_steps.load(Ordering::SeqCst);
    println!("StepLrSchedulerConfig::new({LR}, {step_size}).with_gamma({GAMMA})");
    println!("{iterations_per_epoch} iterations per epoch, {EPOCHS} epochs, accumulation {accumulation}");
    println!("micro-batches {micro_batches}, scheduler steps {scheduler_steps}, optimizer steps {}", lrs.len());
    println!("lr per optimizer step {lrs:?}");
    println!("weight after training {:?} bias {:?}", values(weight.clone()), values(bias.clone()));

    let lr_values: Vec<f32> = lrs.iter().map(|&lr| lr as f32).collect();
    let mut dump = dump_builder("p24a", &args.variant, &input_sha256, &device)
        .metadata("samples", SAMPLES)
        .metadata("epochs", EPOCHS)
        .metadata("batch_size", BATCH)
        .metadata("iterations_per_epoch", iterations_per_epoch)
        .metadata("accumulation", accumulation)
        .metadata("micro_batches", micro_batches)
        .metadata("scheduler_steps", scheduler_steps)
        .metadata("optimizer_steps", lrs.len())
        .build()?;
    dump.tensor("lr", tensor(&lr_values, [lr_values.len()], &device))?
        .tensor("weight.final", weight)?
        .tensor("bias.final", bias)?;
    dump.write(&args.out)?;
    Ok(())
}
