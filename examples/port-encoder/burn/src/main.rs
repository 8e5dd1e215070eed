//! The burn side of the worked port (examples/port-encoder/README.md): the encoder of
//! `../pytorch.py`, loaded from the PyTorch weights, trained two Adam steps on the PyTorch batch
//! and recorded for `pita trace`.
//!
//! ```console
//! port-encoder --out DIR --mistakes layout,loss,eps   # DIR/burn-broken.safetensors
//! port-encoder --out DIR --mistakes none              # DIR/burn-fixed.safetensors
//! ```
//!
//! Each mistake is one a real port makes, one per phase that `pita trace` walks:
//!
//! - `layout` (parameters): the weights loaded without burn-store's PyTorch adapter, the norms'
//!   `weight`/`bias` renamed to `gamma`/`beta` by hand. Every Linear here is square, so each
//!   keeps PyTorch's `[out, in]` layout in burn's `[in, out]` parameter without an error.
//! - `loss` (loss): the per-sample cross-entropy summed, where `F.cross_entropy` averages.
//! - `eps` (step): Adam at burn's default epsilon, 1e-5; PyTorch's is 1e-8.

mod model;

use std::collections::BTreeSet;
use std::error::Error;
use std::path::{Path, PathBuf};

use burn::optim::{AdamConfig, GradientsParams};
use burn::store::{ModuleSnapshot, PyTorchToBurnAdapter, SafetensorsStore};
use burn::tensor::activation::log_softmax;
use burn::tensor::{Device, Int, Tensor, TensorData};
use pita::dump::Dump;
use pita::gelu_grad::assert_exact_gelu_backward;
use pita::load_check::assert_fully_loaded;
use pita::record::Recorder;

use model::Encoder;

/// As `pytorch.py`: `torch.optim.Adam(lr=1e-2)`, two steps.
const LR: f64 = 1e-2;
const STEPS: usize = 2;
/// PyTorch's Adam epsilon; burn's `AdamConfig::new()` has 1e-5.
const TORCH_ADAM_EPSILON: f32 = 1e-8;

const MISTAKES: [&str; 3] = ["layout", "loss", "eps"];

struct Args {
    out: PathBuf,
    mistakes: BTreeSet<String>,
}

impl Args {
    fn parse() -> Result<Self, String> {
        let usage = "usage: port-encoder --out DIR --mistakes LIST (a comma-separated subset of layout,loss,eps, or none)";
        let mut args = std::env::args().skip(1);
        let (mut out, mut mistakes) = (None, None);
        while let Some(arg) = args.next() {
            match arg.as_str() {
                "--out" => out = args.next().map(PathBuf::from),
                "--mistakes" => mistakes = args.next(),
                "-h" | "--help" => return Err(usage.to_string()),
                other => return Err(format!("unknown argument {other:?}\n{usage}")),
            }
        }
        let (Some(out), Some(mistakes)) = (out, mistakes) else { return Err(usage.to_string()) };
        let mistakes: BTreeSet<String> = match mistakes.as_str() {
            "none" => BTreeSet::new(),
            list => list.split(',').map(str::to_string).collect(),
        };
        if let Some(unknown) = mistakes.iter().find(|m| !MISTAKES.contains(&m.as_str())) {
            return Err(format!("unknown mistake {unknown:?}: the mistakes are layout, loss, eps\n{usage}"));
        }
        Ok(Args { out, mistakes })
    }

    fn has(&self, mistake: &str) -> bool {
        self.mistakes.contains(mistake)
    }

    /// `broken` (all three), `fix1` (layout fixed), `fix2` (layout and loss fixed), `fixed`
    /// (none); any other subset is named by its mistakes in catalog order (`loss`, `layout-eps`).
    fn variant(&self) -> String {
        let planted: Vec<&str> = MISTAKES.into_iter().filter(|m| self.has(m)).collect();
        match planted.as_slice() {
            ["layout", "loss", "eps"] => "broken".into(),
            ["loss", "eps"] => "fix1".into(),
            ["eps"] => "fix2".into(),
            [] => "fixed".into(),
            other => other.join("-"),
        }
    }
}

/// The PyTorch state_dict, loaded into `model` through burn-store.
// book:begin load_weights
fn load_weights(model: &mut Encoder, path: &Path, layout_mistake: bool) -> Result<(), Box<dyn Error>> {
    let mut store = if layout_mistake {
        // The mistake: without the adapter the load reports ln1.gamma, ln1.beta, ... missing; a
        // port that renames them by hand gets a clean load, and every square Linear keeps
        // PyTorch's [out, in] layout.
        SafetensorsStore::from_file(path) // pita: allow(p30): the planted mistake
            .with_key_remapping(r"^(.*\.ln\d)\.weight$", "$1.gamma")
            .with_key_remapping(r"^(.*\.ln\d)\.bias$", "$1.beta")
    } else {
        // The fix: the adapter transposes Linear weights and renames the norms' parameters.
        SafetensorsStore::from_file(path).with_from_adapter(PyTorchToBurnAdapter)
    };
    let result = model.load_from(&mut store)?;
    assert_fully_loaded(&result); // nothing left at burn's random init (a transpose passes it)
    Ok(())
}// book:end


/// `tokens` `[batch, seq]` and `targets` `[batch]` (int64), as `pytorch.py` wrote them.
fn load_data(path: &Path, device: &Device) -> Result<(Tensor<2, Int>, Tensor<1, Int>), Box<dyn Error>> {
    let bytes = std::fs::read(path).map_err(|e| format!("{}: {e}", path.display()))?;
    let file = safetensors::SafeTensors::deserialize(&bytes)?;
    let read = |name: &str| -> Result<TensorData, Box<dyn Error>> {
        let view = file.tensor(name)?;
        if view.dtype() != safetensors::Dtype::I64 {
            return Err(format!("{name}: expected int64, found {:?}", view.dtype()).into());
        }
        let values: Vec<i64> = view.data().chunks_exact(8).map(|b| i64::from_le_bytes(b.try_into().unwrap())).collect();
        Ok(TensorData::new(values, view.shape().to_vec()))
    };
    Ok((Tensor::from_data(read("tokens")?, device), Tensor::from_data(read("targets")?, device)))
}

/// Cross-entropy of logits `[batch, classes]` against class indices, averaged over the batch as
/// `F.cross_entropy` does; with the `loss` mistake, summed.
// book:begin cross_entropy
fn cross_entropy(logits: Tensor<2>, targets: Tensor<1, Int>, summed: bool) -> Tensor<1> {
    let [batch] = targets.dims();
    let per_sample = -log_softmax(logits, 1).gather(1, targets.reshape([batch, 1])).reshape([batch]);
    if summed { per_sample.sum() } else { per_sample.mean() }
}// book:end


fn main() -> Result<(), Box<dyn Error>> {
    let args = match Args::parse() {
        Ok(args) => args,
        Err(message) => {
            eprintln!("{message}");
            std::process::exit(2);
        }
    };
    let device = Device::flex().autodiff();
    assert_exact_gelu_backward(&device); // nn.GELU's gradient is erf's; so is Flex's
    device.seed(0); // burn's initial values (recorded as init/*, then replaced by the load): the same every run

    let mut recorder = Recorder::new().torch_names(true); // PyTorch's names and layouts
    let mut model = Encoder::new(&device);
    recorder.init_params(&model)?; // init/*: trace's load audit flags a parameter the load never reached
    load_weights(&mut model, &args.out.join("weights.safetensors"), args.has("layout"))?;
    let (tokens, targets) = load_data(&args.out.join("data.safetensors"), &device)?;
    let [batch] = targets.dims();

    // book:begin adam
    // pita: allow(p20): the planted mistake
    let config = if args.has("eps") { AdamConfig::new() } else { AdamConfig::new().with_epsilon(TORCH_ADAM_EPSILON) };
    // book:end
    let mut optimizer = config.init();

    // book:begin record
    recorder.params(&model)?.optimizer(LR, &config)?; // the settings trace compares first
    for k in 1..=STEPS {
        let loss = {
            let _listening = (k == 1).then(|| recorder.listen()); // activations of the first forward
            cross_entropy(model.forward(tokens.clone()), targets.clone(), args.has("loss"))
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
    // book:end

    let variant = args.variant();
    let builder = Dump::builder().variant(&variant).experiment("port-encoder").metadata("batch_size", batch);
    let path = recorder.into_dump(builder.device(&device))?.write(&args.out)?;
    println!("wrote {}", path.display());
    Ok(())
}
