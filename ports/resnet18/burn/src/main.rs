//! The burn side of the ResNet-18 port (ports/resnet18/README.md): torchvision's `resnet18` of
//! `../pytorch.py`, loaded from the PyTorch weights, trained two AdamW steps in training mode on
//! the PyTorch batch (its dropout masks replayed) and recorded for `pita trace`.
//!
//! ```console
//! port-resnet18 --out DIR --plant none              # DIR/burn-port.safetensors
//! port-resnet18 --out DIR --plant maxpool-no-padding   # DIR/burn-maxpool-no-padding.safetensors
//! ```
//!
//! Each plant is a mistake real ports make, in the place it is made ([`PLANTS`]).

mod model;

use std::collections::BTreeSet;
use std::error::Error;
use std::path::{Path, PathBuf};

use burn::nn::loss::{CrossEntropyLossConfig, Reduction};
use burn::optim::{AdamWConfig, GradientsParams};
use burn::store::{ModuleSnapshot, PyTorchToBurnAdapter, SafetensorsStore};
use burn::tensor::{Device, Int, Tensor, TensorData};
use pita::dump::Dump;
use pita::load_check::assert_fully_loaded;
use pita::record::Recorder;
use pita::replay::Replay;

use model::ResNet;

/// As `pytorch.py`: `torch.optim.AdamW(lr=1e-3)`, two steps, `CrossEntropyLoss(label_smoothing=0.1)`.
const LR: f64 = 1e-3;
const STEPS: usize = 2;
const LABEL_SMOOTHING: f32 = 0.1;
/// `torch.optim.AdamW`'s defaults; burn's `AdamWConfig::new()` has epsilon 1e-5 and weight decay 1e-4.
const TORCH_ADAMW_EPSILON: f32 = 1e-8;
const TORCH_ADAMW_WEIGHT_DECAY: f32 = 1e-2;

/// The mistakes `--plant` can make, each where a port makes it, and the phase trace finds it in.
pub const PLANTS: [(&str, &str); 6] = [
    ("conv-bias", "parameters: Conv2dConfig's default bias left on; the load allowed to be partial"),
    ("maxpool-no-padding", "forward: MaxPool2dConfig's default padding (none) where torchvision pads 1"),
    ("bn-eps", "forward: BatchNorm epsilon 1e-3 (Keras's default), PyTorch's is 1e-5"),
    ("label-smoothing-missing", "loss: CrossEntropyLossConfig without with_smoothing(Some(0.1))"),
    ("adamw-defaults", "step: AdamWConfig::new() (epsilon 1e-5, weight decay 1e-4; PyTorch: 1e-8, 1e-2)"),
    ("bn-biased-running-var", "step: burn's BatchNorm as is, running_var updated with the biased batch variance (p27)"),
];

/// The plants of one run.
#[derive(Debug, Default)]
pub struct Plants(BTreeSet<String>);

impl Plants {
    pub fn has(&self, plant: &str) -> bool {
        debug_assert!(PLANTS.iter().any(|(name, _)| *name == plant), "no plant {plant}");
        self.0.contains(plant)
    }

    /// `port` for the correct port, else the plants in [`PLANTS`]'s order joined by `+`.
    fn variant(&self) -> String {
        let planted: Vec<&str> = PLANTS.iter().map(|(name, _)| *name).filter(|name| self.0.contains(*name)).collect();
        if planted.is_empty() { "port".into() } else { planted.join("+") }
    }
}

struct Args {
    out: PathBuf,
    plants: Plants,
}

impl Args {
    fn parse() -> Result<Self, String> {
        let names: Vec<&str> = PLANTS.iter().map(|(name, _)| *name).collect();
        let usage = format!("usage: port-resnet18 --out DIR [--plant NAME]... (NAME: none, or a comma list of {})", names.join(", "));
        let mut args = std::env::args().skip(1);
        let (mut out, mut plants) = (None, BTreeSet::new());
        while let Some(arg) = args.next() {
            match arg.as_str() {
                "--out" => out = Some(args.next().map(PathBuf::from).ok_or(usage.clone())?),
                "--plant" => {
                    let list = args.next().ok_or(usage.clone())?;
                    for plant in list.split(',').filter(|p| *p != "none") {
                        if !names.contains(&plant) {
                            return Err(format!("unknown plant {plant:?}\n{usage}"));
                        }
                        plants.insert(plant.to_string());
                    }
                }
                "-h" | "--help" => return Err(usage),
                other => return Err(format!("unknown argument {other:?}\n{usage}")),
            }
        }
        let out = out.ok_or(usage)?;
        Ok(Args { out, plants: Plants(plants) })
    }
}

/// The PyTorch state_dict, loaded into `model` through burn-store with its PyTorch adapter
/// (Linear transposed, BatchNorm's `weight`/`bias` to `gamma`/`beta`; `running_mean`/`running_var`
/// load as they are, `num_batches_tracked` is left unused: burn keeps no counter).
fn load_weights(model: &mut ResNet, path: &Path, plants: &Plants) -> Result<(), Box<dyn Error>> {
    // conv-bias: the load reports every convolution's bias missing; the port lets it be partial,
    // so the biases keep burn's random initial values.
    let partial = plants.has("conv-bias");
    let mut store = SafetensorsStore::from_file(path).with_from_adapter(PyTorchToBurnAdapter).allow_partial(partial);
    let result = model.load_from(&mut store)?;
    if !partial {
        assert_fully_loaded(&result); // every parameter and running statistic reached
    }
    Ok(())
}

/// `images` `[batch, 3, h, w]` (float32) and `targets` `[batch]` (int64), as `pytorch.py` wrote them.
fn load_data(path: &Path, device: &Device) -> Result<(Tensor<4>, Tensor<1, Int>), Box<dyn Error>> {
    let bytes = std::fs::read(path).map_err(|e| format!("{}: {e}", path.display()))?;
    let file = safetensors::SafeTensors::deserialize(&bytes)?;
    let (images, targets) = (file.tensor("images")?, file.tensor("targets")?);
    if images.dtype() != safetensors::Dtype::F32 || targets.dtype() != safetensors::Dtype::I64 {
        return Err(format!("{}: expected float32 images and int64 targets", path.display()).into());
    }
    let floats: Vec<f32> = images.data().chunks_exact(4).map(|b| f32::from_le_bytes(b.try_into().unwrap())).collect();
    let labels: Vec<i64> = targets.data().chunks_exact(8).map(|b| i64::from_le_bytes(b.try_into().unwrap())).collect();
    Ok((
        Tensor::from_data(TensorData::new(floats, images.shape().to_vec()), device),
        Tensor::from_data(TensorData::new(labels, targets.shape().to_vec()), device),
    ))
}

fn main() -> Result<(), Box<dyn Error>> {
    let Args { out, plants } = match Args::parse() {
        Ok(args) => args,
        Err(message) => {
            eprintln!("{message}");
            std::process::exit(2);
        }
    };
    let device = Device::flex().autodiff();
    device.seed(0); // burn's initial values (recorded as init/*, then replaced by the load): the same every run

    let mut recorder = Recorder::new().torch_names(true); // PyTorch's names and layouts
    let mut model = ResNet::new(&plants, &device);
    recorder.init_params(&model)?; // init/*: trace's load audit flags a parameter the load never reached
    load_weights(&mut model, &out.join("weights.safetensors"), &plants)?;
    let (images, targets) = load_data(&out.join("data.safetensors"), &device)?;
    let [batch] = targets.dims();
    // PyTorch's dropout masks: burn's generator cannot draw them, so the port replays them.
    let replay = Replay::from_file(&out.join("torch-record.safetensors"))?;

    let smoothing = if plants.has("label-smoothing-missing") { None } else { Some(LABEL_SMOOTHING) };
    let loss_fn = CrossEntropyLossConfig::new().with_smoothing(smoothing).init(&device);
    let config = if plants.has("adamw-defaults") {
        AdamWConfig::new() // pita: allow(p20, p21): the planted mistake
    } else {
        AdamWConfig::new().with_epsilon(TORCH_ADAMW_EPSILON).with_weight_decay(TORCH_ADAMW_WEIGHT_DECAY)
    };
    recorder.optimizer(LR, &config)?; // trace compares it with PyTorch's param_groups
    recorder.loss_fn(&loss_fn, Reduction::Mean)?; // and this with nn.CrossEntropyLoss's settings (burn's always means)
    let mut optimizer = config.init();

    recorder.params(&model)?;
    for k in 1..=STEPS {
        let loss = {
            let _listening = (k == 1).then(|| recorder.listen()); // activations of the first forward
            let _replaying = replay.step(k);
            loss_fn.forward(model.forward(images.clone(), &plants), targets.clone())
        };
        recorder.loss(k, &loss)?;
        println!("step {k} loss {:.7}", loss.clone().into_scalar::<f32>());
        let grads = loss.backward();
        if k == 1 {
            recorder.grads(&model, &grads)?;
        }
        let grads = GradientsParams::from_grads(grads, &model);
        model = optimizer.step(LR, model, grads);
        recorder.step(k, &model)?;
    }

    let builder = Dump::builder().variant(plants.variant()).experiment("port-resnet18").metadata("batch_size", batch);
    let path = recorder.into_dump(builder.device(&device))?.write(&out)?;
    println!("wrote {}", path.display());
    Ok(())
}
