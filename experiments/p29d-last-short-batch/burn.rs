//! p29d: burn's DataLoader has no `drop_last`. A dataset of N samples in batches of B ends with a
//! batch of N mod B, which a PyTorch loop with `drop_last=True` never sees: it updates
//! BatchNorm's running statistics once more and enters the epoch's gradient with each of its
//! samples weighted 1/(N mod B) instead of 1/B. One epoch, the parameters held fixed (no
//! optimizer step), the gradients summed over the batches as PyTorch's `.grad` sums them.
use burn::data::dataloader::batcher::Batcher;
use burn::data::dataloader::DataLoaderBuilder;
use burn::data::dataset::transform::PartialDataset;
use burn::data::dataset::InMemDataset;
use burn::nn::{BatchNorm, BatchNormConfig, Linear};
use burn::tensor::{Device, Tensor, TensorData};
use pita_lab::inputs::{inputs_sha256, ramp};
use pita_lab::{device, dump_builder, linear, tensor, values};

// book:begin setup
const N: usize = 10; // samples in the dataset
const BATCH: usize = 4;
const FEATURES: usize = 2;
const WEIGHT: [f32; FEATURES] = [0.05, -0.025]; // Linear(2, 1), burn's [in, out] layout
const BIAS: f32 = 0.01;
const TARGET: f32 = 0.0; // every sample's target
// book:end

/// One sample: its index in the dataset, its features and its target.
#[derive(Clone, Debug)]
struct Sample {
    index: usize,
    x: [f32; FEATURES],
    y: f32,
}

/// A batch as the loader hands it over, with the indices of its samples.
#[derive(Clone, Debug)]
struct SampleBatch {
    indices: Vec<usize>,
    x: Tensor<2>,
    y: Tensor<2>,
}

#[derive(Clone)]
struct SampleBatcher;

impl Batcher<Sample, SampleBatch> for SampleBatcher {
    fn batch(&self, items: Vec<Sample>, device: &Device) -> SampleBatch {
        let x: Vec<f32> = items.iter().flat_map(|s| s.x).collect();
        let y: Vec<f32> = items.iter().map(|s| s.y).collect();
        SampleBatch {
            indices: items.iter().map(|s| s.index).collect(),
            x: tensor(&x, [items.len(), FEATURES], device),
            y: tensor(&y, [items.len(), 1], device),
        }
    }
}

/// The dataset: features ramp(N·F) as [N, F], every target TARGET.
fn samples(x: &[f32], y: &[f32]) -> InMemDataset<Sample> {
    let items = (0..N)
        .map(|index| Sample { index, x: [x[index * FEATURES], x[index * FEATURES + 1]], y: y[index] })
        .collect();
    InMemDataset::new(items)
}

/// The model and what one epoch leaves behind.
struct Epoch {
    norm: BatchNorm,
    fc: Linear,
    weight_grad: Option<Tensor<2>>,
    bias_grad: Option<Tensor<1>>,
    /// Each sample's weight in the epoch's summed gradient: 1/|its batch| per batch it was in.
    sample_weight: Vec<f32>,
    loader_batch_sizes: Vec<usize>,
    trained_batch_sizes: Vec<usize>,
}

// book:begin unbias
/// p27's fix, in every variant here so that only the short batch differs: burn updates
/// running_var with the biased batch variance; redo the update with the unbiased one.
fn unbias_running_var(norm: &BatchNorm, before: Tensor<1>, n: usize) {
    let keep = before.mul_scalar(1.0 - norm.momentum);
    let batch_term = norm.running_var.value_sync() - keep.clone();
    norm.running_var.update(keep + batch_term.mul_scalar(n as f64 / (n as f64 - 1.0)));
}
// book:end

impl Epoch {
    fn new(device: &Device) -> Self {
        Epoch {
            norm: BatchNormConfig::new(FEATURES).init(device), // momentum 0.1, epsilon 1e-5
            fc: linear(&WEIGHT, [FEATURES, 1], &[BIAS], device),
            weight_grad: None,
            bias_grad: None,
            sample_weight: vec![0.0; N],
            loader_batch_sizes: Vec::new(),
            trained_batch_sizes: Vec::new(),
        }
    }

    /// A training step without the optimizer: BatchNorm in training mode, the batch's mean
    /// squared error, its gradient added to the epoch's.
    fn train_step(&mut self, batch: &SampleBatch) {
        let n = batch.indices.len();
        let before = self.norm.running_var.value_sync();
        let out = self.fc.forward(self.norm.forward(batch.x.clone()));
        unbias_running_var(&self.norm, before, n);
        let loss = (out - batch.y.clone()).powi_scalar(2).mean();
        let grads = loss.backward();
        let weight_grad = self.fc.weight.val().grad(&grads).expect("weight.grad");
        let bias_grad = self.fc.bias.as_ref().expect("bias").val().grad(&grads).expect("bias.grad");
        self.weight_grad = Some(self.weight_grad.take().map_or(weight_grad.clone(), |sum| sum + weight_grad));
        self.bias_grad = Some(self.bias_grad.take().map_or(bias_grad.clone(), |sum| sum + bias_grad));
        for &index in &batch.indices {
            self.sample_weight[index] += 1.0 / n as f32;
        }
        self.trained_batch_sizes.push(n);
    }

    /// Every batch the loader yields, through `train_step` (all of them unless `skip_short`).
    fn run(&mut self, loader: &dyn burn::data::dataloader::DataLoader<SampleBatch>, skip_short: bool) {
        for batch in loader.iter() {
            let batch = batch.expect("an in-memory dataset yields every item");
            self.loader_batch_sizes.push(batch.indices.len());
            if skip_short {
                // book:begin fixed
                if batch.indices.len() < BATCH {
                    continue; // drop_last=True: the short last batch never reaches the model
                }
                // book:end
            }
            self.train_step(&batch);
        }
    }
}

fn joined(sizes: &[usize]) -> String {
    sizes.iter().map(usize::to_string).collect::<Vec<_>>().join(",")
}

fn main() -> Result<(), pita::Error> {
    let args = pita_lab::args::Args::parse(&["port", "fixed", "trimmed"]);
    let device = device();
    let (x, y) = (ramp(N * FEATURES, 0), vec![TARGET; N]);
    let input_sha256 = inputs_sha256(&[&x, &y, &WEIGHT, &[BIAS]]);
    let dataset = samples(&x, &y);
    let mut epoch = Epoch::new(&device);
    match args.variant.as_str() {
        "trimmed" => {
            // book:begin trimmed
            let full = N - N % BATCH; // keep whole batches only
            let dataset = PartialDataset::new(dataset, 0, full);
            // book:end
            let loader = DataLoaderBuilder::new(SampleBatcher).batch_size(BATCH).set_device(device.clone()).build(dataset);
            epoch.run(loader.as_ref(), false);
        }
        variant => {
            // book:begin port
            let loader = DataLoaderBuilder::new(SampleBatcher)
                .batch_size(BATCH) // no drop_last to set
                .set_device(device.clone())
                .build(dataset);
            // book:end
            epoch.run(loader.as_ref(), variant == "fixed");
        }
    }

    let norm = &epoch.norm;
    let (running_mean, running_var) = (norm.running_mean.value_sync(), norm.running_var.value_sync());
    let weight_grad = epoch.weight_grad.clone().expect("at least one batch");
    let bias_grad = epoch.bias_grad.clone().expect("at least one batch");
    println!("batches from the loader: {:?}; trained on: {:?}", epoch.loader_batch_sizes, epoch.trained_batch_sizes);
    println!("sample weight {:?}", epoch.sample_weight);
    println!("running_mean {:?}", values(running_mean.clone()));
    println!("running_var  {:?}", values(running_var.clone()));
    println!("fc.weight.grad {:?}", values(weight_grad.clone()));
    println!("fc.bias.grad   {:?}", values(bias_grad.clone()));

    let mut dump = dump_builder("p29d", &args.variant, &input_sha256, &device)
        .metadata("n_samples", N)
        .metadata("batch_size", BATCH)
        .metadata("momentum", norm.momentum)
        .metadata("loader_batch_sizes", joined(&epoch.loader_batch_sizes))
        .metadata("trained_batch_sizes", joined(&epoch.trained_batch_sizes))
        .build()?;
    dump.tensor("x", tensor(&x, [N, FEATURES], &device))?
        .data("sample_weight", TensorData::new(epoch.sample_weight.clone(), [N]))?
        .tensor("running_mean", running_mean)?
        .tensor("running_var", running_var)?
        .tensor("fc.weight.grad", weight_grad)?
        .tensor("fc.bias.grad", bias_grad)?;
    dump.write(&args.out)?;
    Ok(())
}
