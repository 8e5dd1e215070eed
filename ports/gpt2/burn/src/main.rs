//! The burn side of the GPT-2 port (ports/gpt2/README.md): `../pytorch.py`'s GPT2LMHeadModel,
//! loaded from the PyTorch weights, trained two AdamW steps on the PyTorch batch with the
//! reference's dropout masks replayed, and recorded for `pita trace`.
//!
//! ```console
//! port-gpt2 --out DIR                         # the port: DIR/burn-port.safetensors
//! port-gpt2 --out DIR --plant gelu-exact      # one mistake planted: DIR/burn-gelu-exact.safetensors
//! port-gpt2 --out DIR --size medium           # GPT-2 medium's shape, as `pytorch.py --size medium` (bench/large_port.py)
//! ```
//!
//! DIR holds what `pytorch.py --out DIR` wrote: weights.safetensors, data.safetensors and the
//! reference recording torch-record.safetensors (whose dropout masks the run replays). The
//! recording streams to disk as it is made, in shards of `--shard-bytes N` (default the
//! recorder's, 256 MiB) once it outgrows one: the medium size's is about 7 GB.

mod model;
mod plants;

use std::error::Error;
use std::path::{Path, PathBuf};

use burn::module::Param;
use burn::nn::LinearConfig;
use burn::optim::{AdamWConfig, GradientsParams};
use burn::store::{ModuleSnapshot, PyTorchToBurnAdapter, SafetensorsStore};
use burn::tensor::activation::log_softmax;
use burn::tensor::{Device, Int, Tensor, TensorData};
use pita::dump::Dump;
use pita::load_check::assert_fully_loaded;
use pita::record::{safetensors_names, Recorder};
use pita::replay::Replay;

use model::{Gpt2, Size};
use plants::{Plants, PLANTS};

/// As `pytorch.py`: `torch.optim.AdamW(lr=1e-3)`, two steps.
const LR: f64 = 1e-3;
const STEPS: usize = 2;
/// `torch.optim.AdamW`'s defaults; burn's `AdamWConfig::new()` has epsilon 1e-5, weight decay 1e-4.
const TORCH_ADAMW_EPSILON: f32 = 1e-8;
const TORCH_ADAMW_WEIGHT_DECAY: f32 = 1e-2;
// book:begin load_renames
/// PyTorch name -> burn path, for the load: the LayerNorms' `weight`/`bias` are burn's
/// `gamma`/`beta` (what the adapter would rename, without its transposes). The recorder turns
/// them around.
const LOAD_RENAMES: [(&str, &str); 2] = [(r"^(.+\.ln_(?:\d+|f))\.weight$", "$1.gamma"), (r"^(.+\.ln_(?:\d+|f))\.bias$", "$1.beta")];
// book:end

struct Args {
    out: PathBuf,
    plants: Plants,
    size: Size,
    shard_bytes: Option<usize>,
}

fn usage() -> String {
    let plants: Vec<String> = PLANTS.iter().map(|(name, what)| format!("  {name}: {what}")).collect();
    format!(
        "usage: port-gpt2 --out DIR [--plant NAME[,NAME...]]... (none: the port) [--size tiny|medium (pytorch.py's, default tiny)] [--shard-bytes N]\nplants:\n{}",
        plants.join("\n")
    )
}

impl Args {
    fn parse() -> Result<Self, String> {
        let mut args = std::env::args().skip(1);
        let (mut out, mut plants, mut size, mut shard_bytes) = (None, Vec::new(), Size::TINY, None);
        while let Some(arg) = args.next() {
            match arg.as_str() {
                "--out" => out = Some(PathBuf::from(args.next().ok_or_else(usage)?)),
                "--size" => {
                    let name = args.next().ok_or_else(usage)?;
                    size = Size::named(&name).ok_or_else(|| format!("unknown size {name:?}\n{}", usage()))?;
                }
                "--shard-bytes" => {
                    let bytes = args.next().ok_or_else(usage)?;
                    let bytes = bytes.parse().ok().filter(|&n: &usize| n > 0);
                    shard_bytes = Some(bytes.ok_or_else(|| format!("--shard-bytes takes a positive number of bytes\n{}", usage()))?);
                }
                "--plant" => plants.push(args.next().ok_or_else(usage)?),
                "-h" | "--help" => return Err(usage()),
                other => return Err(format!("unknown argument {other:?}\n{}", usage())),
            }
        }
        Ok(Args { out: out.ok_or_else(usage)?, plants: Plants::parse(&plants)?, size, shard_bytes })
    }
}

/// The PyTorch parameters, loaded into `model` through burn-store.
///
/// GPT-2's Conv1D weights are stored `[in, out]`, which is burn's Linear layout already, so they
/// load as they are: burn-store's PyTorch adapter would transpose them as `nn.Linear` weights.
/// What the adapter would do that is needed here, the LayerNorms' `weight`/`bias` to
/// `gamma`/`beta`, is [`LOAD_RENAMES`].
fn load_weights(model: &mut Gpt2, path: &Path, plants: &Plants) -> Result<(), Box<dyn Error>> {
    // book:begin conv1d_through_adapter
    if plants.has("conv1d-through-adapter") {
        // Through the adapter, c_attn, c_fc and mlp.c_proj fail with a shape mismatch (transposed,
        // they are [out, in]); loading exactly those again without the adapter silences the
        // errors. attn.c_proj is square: it loaded through the adapter without an error, transposed.
        model.load_from(&mut SafetensorsStore::from_file(path).with_from_adapter(PyTorchToBurnAdapter).validate(false))?;
        let result = model.load_from(&mut SafetensorsStore::from_file(path).with_regex(r"\.(c_attn|c_fc|mlp\.c_proj)\.weight$").allow_partial(true))?;
        if !result.errors.is_empty() {
            return Err(format!("{:?}", result.errors).into());
        }
        return Ok(());
    }
    // book:end
    // book:begin load_weights
    let mut store = SafetensorsStore::from_file(path); // no adapter: Conv1D's [in, out] is burn's Linear layout
    for (pattern, replacement) in LOAD_RENAMES {
        store = store.with_key_remapping(pattern, replacement);
    }
    let result = model.load_from(&mut store)?;
    assert_fully_loaded(&result); // nothing left at burn's random init
    // book:end
    Ok(())
}

/// `tokens` `[batch, seq]` (int64), as `pytorch.py` wrote them.
fn load_tokens(path: &Path, device: &Device) -> Result<Tensor<2, Int>, Box<dyn Error>> {
    let bytes = std::fs::read(path).map_err(|e| format!("{}: {e}", path.display()))?;
    let file = safetensors::SafeTensors::deserialize(&bytes)?;
    let view = file.tensor("tokens")?;
    if view.dtype() != safetensors::Dtype::I64 {
        return Err(format!("tokens: expected int64, found {:?}", view.dtype()).into());
    }
    let values: Vec<i64> = view.data().chunks_exact(8).map(|b| i64::from_le_bytes(b.try_into().unwrap())).collect();
    Ok(Tensor::from_data(TensorData::new(values, view.shape().to_vec()), device))
}

/// The language-model loss: the logits at position t against token t + 1, averaged over the
/// batch * (seq - 1) predictions (transformers shifts `labels=tokens` the same way).
fn next_token_loss(logits: Tensor<3>, tokens: Tensor<2, Int>, plants: &Plants) -> Tensor<1> {
    let [b, t, v] = logits.dims();
    // book:begin loss
    let (logits, targets) = if plants.has("loss-no-shift") {
        (logits.narrow(1, 0, t - 1), tokens.narrow(1, 0, t - 1))
    } else {
        (logits.narrow(1, 0, t - 1), tokens.narrow(1, 1, t - 1))
    };
    let n = b * (t - 1);
    let log_probs = log_softmax(logits.reshape([n, v]), 1);
    (-log_probs.gather(1, targets.reshape([n, 1]))).mean()
    // book:end
}

fn main() -> Result<(), Box<dyn Error>> {
    let args = match Args::parse() {
        Ok(args) => args,
        Err(message) => {
            eprintln!("{message}");
            std::process::exit(2);
        }
    };
    let plants = &args.plants;
    let device = Device::flex().autodiff();
    device.seed(0); // burn's initial values (recorded as init/*, then replaced by the load): the same every run

    let weights = args.out.join("weights.safetensors");
    let tokens = load_tokens(&args.out.join("data.safetensors"), &device)?;
    let [batch, _] = tokens.dims();
    let builder = Dump::builder().variant(plants.variant()).experiment("port-gpt2").metadata("batch_size", batch).device(&device);
    let path = args.out.join(format!("burn-{}.safetensors", plants.variant()));
    // book:begin recorder
    // Each tensor under the PyTorch name it was loaded from (the load's renames turned around),
    // the rest under PyTorch's names; the Linear weights in the [in, out] layout the Conv1D
    // checkpoint has and the port loaded as it is (load_weights).
    let recorder = Recorder::new().torch_names_from(safetensors_names(&weights)?, &LOAD_RENAMES)?.transpose_linears(false);
    // book:end
    let recorder = recorder.steps(STEPS).stream_to(&path, builder)?; // to disk as recorded, a shard at a time
    let mut recorder = match args.shard_bytes {
        Some(bytes) => recorder.shard_bytes(bytes),
        None => recorder,
    };
    let layer_norm_epsilon = if plants.has("layer-norm-eps") { 1e-12 } else { model::LAYER_NORM_EPSILON };
    let mut model = Gpt2::new(args.size, &device, layer_norm_epsilon);
    recorder.init_params(&model)?; // init/*: trace's load audit flags a parameter the load never reached
    load_weights(&mut model, &weights, plants)?;
    if plants.has("untied-head") {
        // burn has no tied parameters: a head of its own, a copy of the embedding (Linear: [in, out];
        // detached: a Param is a leaf)
        let mut head = LinearConfig::new(args.size.width, args.size.vocab).with_bias(false).init(&device);
        head.weight = Param::from_tensor(model.transformer.wte.weight.val().transpose().detach());
        model.lm_head = Some(head);
    }
    // Nothing to replay with dropout off (the medium size, whose sharded reference Replay cannot read).
    let replays = args.size.dropout > 0.0 && !plants.has("no-mask-replay");
    // book:begin replay
    let masks = replays.then(|| Replay::from_file(&args.out.join("torch-record.safetensors"))).transpose()?; // the reference's dropout masks
    // book:end

    // book:begin adamw
    let config = if plants.has("adamw-defaults") {
        AdamWConfig::new() // pita: allow(p20, p21): the planted mistake
    } else {
        AdamWConfig::new().with_epsilon(TORCH_ADAMW_EPSILON).with_weight_decay(TORCH_ADAMW_WEIGHT_DECAY)
    };
    let mut optimizer = config.init();
    recorder.optimizer(LR, &config)?; // trace compares it with PyTorch's param_groups
    // book:end

    // book:begin record
    recorder.params(&model)?;
    for k in 1..=STEPS {
        let loss = {
            let _listening = (k == 1).then(|| recorder.listen()); // activations of the first forward
            let _replaying = masks.as_ref().map(|masks| masks.step(k)); // pita::replay::dropout applies step k's masks
            next_token_loss(model.forward(tokens.clone(), plants), tokens.clone(), plants)
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

    let path = recorder.finish()?; // `path`, or its index when the recording took more than one shard
    println!("wrote {}", path.display());
    Ok(())
}
