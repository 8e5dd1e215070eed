//! The burn side of the GRU classifier port (ports/gru-classifier/README.md): the classifier of
//! `../pytorch.py`, loaded from the PyTorch weights, trained with AdamW and a StepLR schedule on
//! the PyTorch batch with the reference's dropout masks replayed, and recorded for `pita trace`.
//!
//! ```console
//! port-gru-classifier --out DIR --plant none                # DIR/burn-port.safetensors
//! port-gru-classifier --out DIR --plant gates-rz-swapped    # DIR/burn-gates-rz-swapped.safetensors
//! port-gru-classifier --out DIR --plant none --steps 100 --every 10 --no-dropout   # a light trace of 100 steps
//! ```
//!
//! Each plant is a mistake users make porting this model, one `if plant(...)` where it is made:
//!
//! - `gates-rz-swapped` (parameters): PyTorch's packed rows split in burn's field order
//!   (update, reset, new), where PyTorch packs r | z | n;
//! - `hh-not-transposed` (parameters): the square hidden-to-hidden gate weights loaded in
//!   PyTorch's `[out, in]` layout (the non-square input weights fail to multiply, so a user
//!   transposes those and not these);
//! - `bias-hh-dropped` (parameters): only `bias_ih_l0` loaded, as if a gate had one bias like a
//!   Linear; the hidden biases keep burn's initial values;
//! - `reset-after-false` (forward): `GruConfig::with_reset_after(false)`, the GRU of the paper's
//!   last revision, `n = tanh(W_in x + b_in + W_hn (r * h) + b_hn)`; PyTorch's is reset-after;
//! - `h-n-as-first-step` (forward): PyTorch's `h_n[0]` (layer 0's final state; burn's `Gru`
//!   returns no `h_n`) translated as the output's step 0 instead of its last step;
//! - `loss-pad-tokens` (loss): `CrossEntropyLossConfig::with_pad_tokens([0])`, padding index 0
//!   carried over from the embedding to the loss, which then ignores every target of class 0;
//! - `padding-idx-lost` (backward): burn's `Embedding` as is, without `padding_idx`, so the
//!   padding row gets a gradient;
//! - `adamw-defaults` (step): `AdamWConfig::new()`, epsilon 1e-5 and weight decay 1e-4, where
//!   `torch.optim.AdamW` has 1e-8 and 1e-2;
//! - `scheduler-after-step` (a later step): the scheduler stepped after the optimizer, in
//!   PyTorch's order, starting from the initial rate. burn's `LrScheduler::step` returns the rate
//!   of the step about to be taken, PyTorch's `scheduler.step()` sets the next step's: ported in
//!   PyTorch's order, every rate lags one step, which shows first where the rate changes (step
//!   `STEP_SIZE + 1`'s update).

mod model;

use std::collections::BTreeSet;
use std::error::Error;
use std::path::{Path, PathBuf};
use std::sync::OnceLock;

use burn::lr_scheduler::module_lr_scheduler::ModuleLearningRate;
use burn::lr_scheduler::step::StepLrSchedulerConfig;
use burn::module::Param;
use burn::nn::loss::{CrossEntropyLossConfig, Reduction};
use burn::nn::Gru;
use burn::optim::{AdamWConfig, GradientsParams};
use burn::store::{ModuleSnapshot, PyTorchToBurnAdapter, SafetensorsStore};
use burn::tensor::{Device, Int, Tensor, TensorData};
use pita::dump::Dump;
use pita::record::Recorder;
use pita::replay::Replay;
use safetensors::SafeTensors;

use model::{CharGru, PAD};

/// As `pytorch.py`: `torch.optim.AdamW(lr=1e-2)`, two steps unless `--steps` says otherwise,
/// and `StepLR(step_size=30, gamma=0.1)`.
const LR: f64 = 1e-2;
const STEPS: usize = 2;
const STEP_SIZE: usize = 30;
const GAMMA: f64 = 0.1;
/// `torch.optim.AdamW`'s defaults; burn's `AdamWConfig::new()` has epsilon 1e-5 and weight decay 1e-4.
const TORCH_ADAMW_EPSILON: f32 = 1e-8;
const TORCH_ADAMW_WEIGHT_DECAY: f32 = 1e-2;

const PLANTS: [&str; 9] = [
    "gates-rz-swapped",
    "hh-not-transposed",
    "bias-hh-dropped",
    "reset-after-false",
    "h-n-as-first-step",
    "loss-pad-tokens",
    "padding-idx-lost",
    "adamw-defaults",
    "scheduler-after-step",
];

static PLANTED: OnceLock<BTreeSet<String>> = OnceLock::new();

/// Whether the mistake `name` (one of [`PLANTS`]) is planted in this run.
pub fn plant(name: &str) -> bool {
    debug_assert!(PLANTS.contains(&name), "{name} is not a plant");
    PLANTED.get().is_some_and(|planted| planted.contains(name))
}

struct Args {
    out: PathBuf,
    plants: BTreeSet<String>,
    steps: usize,
    /// A light trace (`Recorder::every`): parameters every `every` steps and after the last.
    every: Option<usize>,
    /// `Dropout(p=0)`, as `pytorch.py --no-dropout`: a light trace holds step 1's masks only.
    no_dropout: bool,
}

impl Args {
    fn parse() -> Result<Self, String> {
        let usage = format!(
            "usage: port-gru-classifier --out DIR --plant NAME (repeatable or a comma list; none: the correct port) [--steps N (default {STEPS})] [--every K] [--no-dropout]. Plants: {}",
            PLANTS.join(", ")
        );
        let mut args = std::env::args().skip(1);
        let (mut out, mut plants, mut given, mut steps, mut every, mut no_dropout) = (None, BTreeSet::new(), false, STEPS, None, false);
        let count = |flag: &str, value: Option<String>| match value.as_deref().map(str::parse::<usize>) {
            Some(Ok(n)) if n >= 1 => Ok(n),
            _ => Err(format!("{flag} takes a positive integer, got {}\n{usage}", value.as_deref().map_or("nothing".to_string(), |v| format!("{v:?}")))),
        };
        while let Some(arg) = args.next() {
            match arg.as_str() {
                "--out" => out = args.next().map(PathBuf::from),
                "--steps" => steps = count("--steps", args.next())?,
                "--every" => every = Some(count("--every", args.next())?),
                "--no-dropout" => no_dropout = true,
                "--plant" => {
                    let list = args.next().ok_or_else(|| usage.clone())?;
                    given = true;
                    plants.extend(list.split(',').filter(|name| *name != "none").map(str::to_string));
                }
                "-h" | "--help" => return Err(usage),
                other => return Err(format!("unknown argument {other:?}\n{usage}")),
            }
        }
        let (Some(out), true) = (out, given) else { return Err(usage) };
        if let Some(unknown) = plants.iter().find(|name| !PLANTS.contains(&name.as_str())) {
            return Err(format!("unknown plant {unknown:?}\n{usage}"));
        }
        Ok(Args { out, plants, steps, every, no_dropout })
    }

    /// `port` for the correct port, else the plants in catalog order, joined by `+`.
    fn variant(&self) -> String {
        let planted: Vec<&str> = PLANTS.into_iter().filter(|name| self.plants.contains(*name)).collect();
        if planted.is_empty() { "port".to_string() } else { planted.join("+") }
    }
}

/// A tensor of `file` as `TensorData` (float32 or int64, as `pytorch.py` wrote them).
fn tensor_data(file: &SafeTensors, name: &str) -> Result<TensorData, Box<dyn Error>> {
    let view = file.tensor(name).map_err(|e| format!("{name}: {e}"))?;
    let shape = view.shape().to_vec();
    let data = match view.dtype() {
        safetensors::Dtype::F32 => TensorData::new(view.data().chunks_exact(4).map(|b| f32::from_le_bytes(b.try_into().unwrap())).collect(), shape),
        safetensors::Dtype::I64 => TensorData::new(view.data().chunks_exact(8).map(|b| i64::from_le_bytes(b.try_into().unwrap())).collect(), shape),
        other => return Err(format!("{name}: expected float32 or int64, found {other:?}").into()),
    };
    Ok(data)
}

fn read_file(path: &Path) -> Result<Vec<u8>, Box<dyn Error>> {
    Ok(std::fs::read(path).map_err(|e| format!("{}: {e}", path.display()))?)
}

/// The PyTorch state_dict, loaded into `model`: the embedding and the head through burn-store
/// (its PyTorch adapter transposes the Linear's weight), the GRU by hand.
fn load_weights(model: &mut CharGru, path: &Path, device: &Device) -> Result<(), Box<dyn Error>> {
    let mut store = SafetensorsStore::from_file(path).with_from_adapter(PyTorchToBurnAdapter).allow_partial(true);
    let result = model.load_from(&mut store)?;
    // burn-store leaves the GRU's gates missing (PyTorch's packed tensors unused): everything else must have loaded.
    let not_gru: Vec<&str> = result.missing.iter().map(|(path, _)| path.as_str()).filter(|path| !path.starts_with("gru.")).collect();
    if !not_gru.is_empty() || !result.errors.is_empty() {
        return Err(format!("{}: not loaded: {not_gru:?}; errors: {:?}", path.display(), result.errors).into());
    }
    let bytes = read_file(path)?;
    load_gru(&mut model.gru, &SafeTensors::deserialize(&bytes)?, "gru", device)
}

/// PyTorch's `nn.GRU` packs its three gates into one tensor per side, rows r | z | n:
/// `weight_ih_l0` `[3·hidden, in]`, `weight_hh_l0` `[3·hidden, hidden]`, `bias_ih_l0` and
/// `bias_hh_l0` `[3·hidden]`. burn's `Gru` has one `GateController` per gate, each two Linears
/// (`input_transform`, `hidden_transform`) with weights `[in, out]`. burn-store does not map one
/// onto the other, so: split the rows, transpose each block.
fn load_gru(gru: &mut Gru, file: &SafeTensors, prefix: &str, device: &Device) -> Result<(), Box<dyn Error>> {
    let hidden = gru.d_hidden;
    let [d_input, _] = gru.reset_gate.input_transform.weight.dims();
    let read = |name: &str, shape: &[usize]| -> Result<TensorData, Box<dyn Error>> {
        let name = format!("{prefix}.{name}");
        let data = tensor_data(file, &name)?;
        if data.shape().as_slice() != shape {
            return Err(format!("{name}: shape {:?}, expected {shape:?} (a one-layer GRU, {d_input} -> {hidden})", data.shape()).into());
        }
        Ok(data)
    };
    let weight_ih = Tensor::<2>::from_data(read("weight_ih_l0", &[3 * hidden, d_input])?, device);
    let weight_hh = Tensor::<2>::from_data(read("weight_hh_l0", &[3 * hidden, hidden])?, device);
    let bias_ih = Tensor::<1>::from_data(read("bias_ih_l0", &[3 * hidden])?, device);
    let bias_hh = Tensor::<1>::from_data(read("bias_hh_l0", &[3 * hidden])?, device);
    let gates = if plant("gates-rz-swapped") {
        [&mut gru.update_gate, &mut gru.reset_gate, &mut gru.new_gate] // burn's field order
    } else {
        [&mut gru.reset_gate, &mut gru.update_gate, &mut gru.new_gate] // PyTorch's r | z | n
    };
    for (block, gate) in gates.into_iter().enumerate() {
        let (start, length) = (block * hidden, hidden);
        gate.input_transform.weight = Param::from_tensor(weight_ih.clone().narrow(0, start, length).transpose());
        let hidden_weight = weight_hh.clone().narrow(0, start, length);
        // Square, so PyTorch's [out, in] left as it is multiplies too, silently.
        let hidden_weight = if plant("hh-not-transposed") { hidden_weight } else { hidden_weight.transpose() };
        gate.hidden_transform.weight = Param::from_tensor(hidden_weight);
        gate.input_transform.bias = Some(Param::from_tensor(bias_ih.clone().narrow(0, start, length)));
        if !plant("bias-hh-dropped") {
            gate.hidden_transform.bias = Some(Param::from_tensor(bias_hh.clone().narrow(0, start, length)));
        }
    }
    Ok(())
}

/// `tokens` `[batch, seq]` and `targets` `[batch]` (int64), as `pytorch.py` wrote them.
fn load_data(path: &Path, device: &Device) -> Result<(Tensor<2, Int>, Tensor<1, Int>), Box<dyn Error>> {
    let bytes = read_file(path)?;
    let file = SafeTensors::deserialize(&bytes)?;
    Ok((Tensor::from_data(tensor_data(&file, "tokens")?, device), Tensor::from_data(tensor_data(&file, "targets")?, device)))
}

fn main() -> Result<(), Box<dyn Error>> {
    let args = match Args::parse() {
        Ok(args) => args,
        Err(message) => {
            eprintln!("{message}");
            std::process::exit(2);
        }
    };
    PLANTED.set(args.plants.clone()).expect("set once");
    let device = Device::flex().autodiff();
    device.seed(0); // burn's initial values (recorded as init/*, then replaced by the load): the same every run

    let recorder = Recorder::new().torch_names(true).steps(args.steps); // PyTorch's names and layouts
    // A light trace: the loss and the gradient norms every step, the parameters every `every` steps.
    let mut recorder = if let Some(every) = args.every { recorder.every(every) } else { recorder };
    let mut model = CharGru::new(&device, if args.no_dropout { 0.0 } else { model::DROPOUT });
    recorder.init_params(&model)?; // init/*: trace's load audit flags a parameter the load never reached
    load_weights(&mut model, &args.out.join("weights.safetensors"), &device)?;
    let (tokens, targets) = load_data(&args.out.join("data.safetensors"), &device)?;
    let [batch] = targets.dims();
    let reference = args.out.join("torch-record.safetensors");
    let replay = Replay::from_file(&reference)?; // PyTorch's dropout masks: no seed aligns two frameworks' generators

    let loss_config = CrossEntropyLossConfig::new();
    let loss_config = if plant("loss-pad-tokens") { loss_config.with_pad_tokens(Some(vec![PAD as usize])) } else { loss_config };
    let loss_fn = loss_config.init(&device);
    let optimizer_config = if plant("adamw-defaults") {
        AdamWConfig::new() // pita: allow(p20, p21): the planted mistake
    } else {
        AdamWConfig::new().with_epsilon(TORCH_ADAMW_EPSILON).with_weight_decay(TORCH_ADAMW_WEIGHT_DECAY)
    };
    let mut optimizer = optimizer_config.init();
    recorder.optimizer(LR, &optimizer_config)?; // trace compares it with PyTorch's param_groups
    recorder.loss_fn(&loss_fn, Reduction::Mean)?; // and this with nn.CrossEntropyLoss's settings (burn's always means)

    // StepLR: burn's scheduler gives the rate of the step about to be taken, so it steps before the optimizer.
    let mut scheduler = StepLrSchedulerConfig::new(LR, STEP_SIZE).with_gamma(GAMMA).init()?;
    let mut lagging: ModuleLearningRate = LR.into(); // scheduler-after-step: the rate PyTorch's order leaves for the next step

    recorder.params(&model)?;
    for k in 1..=args.steps {
        let loss = {
            let _listening = (k == 1).then(|| recorder.listen()); // activations of the first forward
            let _replaying = replay.step(k);
            loss_fn.forward(model.forward(tokens.clone()), targets.clone())
        };
        recorder.loss(k, &loss)?;
        let lr = if plant("scheduler-after-step") { lagging.clone() } else { scheduler.step() };
        println!("step {k} lr {:e} loss {:.7}", lr.base(), loss.clone().into_scalar::<f32>());
        let grads = loss.backward();
        if k == 1 {
            recorder.grads(&model, &grads)?;
        }
        if args.every.is_some() {
            recorder.grad_norms(k, &model, &grads)?;
        }
        let grads = GradientsParams::from_grads(grads, &model);
        model = optimizer.step(lr, model, grads);
        if plant("scheduler-after-step") {
            lagging = scheduler.step(); // PyTorch's order: scheduler.step() after optimizer.step()
        }
        recorder.step(k, &model)?;
    }

    let builder = Dump::builder().variant(args.variant()).experiment("port-gru-classifier").metadata("batch_size", batch);
    let path = recorder.into_dump(builder.device(&device))?.write(&args.out)?;
    println!("wrote {}", path.display());
    Ok(())
}
