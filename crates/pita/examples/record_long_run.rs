//! A light trace of a long run, streamed to disk in shards: what `tests/test_burn_record_sharded.py`
//! traces, and an example of `Recorder::stream_to`, `steps`, `every` and `grad_norms`.
//!
//! ```text
//! cargo run -p pita --example record_long_run -- --out DIR/burn-record.safetensors
//!     [--steps N (default 20)] [--every K] [--shard-bytes BYTES] [--scale X (the inputs' factor, default 1)]
//! ```
//!
//! A small MLP with a LayerNorm, trained with SGD on a fixed batch; it prints the path written
//! (the `.safetensors` path, or its `.index.json` when the recording took more than one shard).

use std::path::PathBuf;

use burn::module::Module;
use burn::nn::{LayerNorm, LayerNormConfig, Linear, LinearConfig};
use burn::optim::{GradientsParams, SgdConfig};
use burn::tensor::{Device, Tensor};
use pita::dump::Dump;
use pita::record::{tap, Recorder};

#[derive(Module, Debug)]
struct Mlp {
    fc1: Linear,
    norm: LayerNorm,
    fc2: Linear,
}

impl Mlp {
    fn forward(&self, x: Tensor<2>) -> Tensor<2> {
        let x = self.fc1.forward(x);
        tap("fc1", &x);
        let x = self.norm.forward(x).tanh();
        tap("norm", &x);
        let x = self.fc2.forward(x);
        tap("fc2", &x);
        x
    }
}

struct Args {
    out: PathBuf,
    steps: usize,
    every: Option<usize>,
    shard_bytes: Option<usize>,
    scale: f32,
}

const USAGE: &str = "usage: record_long_run --out PATH.safetensors [--steps N] [--every K] [--shard-bytes BYTES] [--scale X]";

fn parse() -> Result<Args, String> {
    let mut args = Args { out: PathBuf::new(), steps: 20, every: None, shard_bytes: None, scale: 1.0 };
    let mut given = std::env::args().skip(1);
    while let Some(flag) = given.next() {
        let value = given.next().ok_or_else(|| format!("{flag} takes a value\n{USAGE}"))?;
        let number = |what: &str| value.parse::<usize>().map_err(|_| format!("{what} takes a whole number, not {value:?}\n{USAGE}"));
        match flag.as_str() {
            "--out" => args.out = PathBuf::from(&value),
            "--steps" => args.steps = number("--steps")?,
            "--every" => args.every = Some(number("--every")?),
            "--shard-bytes" => args.shard_bytes = Some(number("--shard-bytes")?),
            "--scale" => args.scale = value.parse().map_err(|_| format!("--scale takes a number, not {value:?}\n{USAGE}"))?,
            other => return Err(format!("unknown option {other}\n{USAGE}")),
        }
    }
    if args.out.as_os_str().is_empty() {
        return Err(USAGE.to_string());
    }
    Ok(args)
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let args = parse().unwrap_or_else(|message| {
        eprintln!("{message}");
        std::process::exit(2);
    });
    let device = Device::flex().autodiff();
    device.seed(0);
    let mut model = Mlp { fc1: LinearConfig::new(8, 32).init(&device), norm: LayerNormConfig::new(32).init(&device), fc2: LinearConfig::new(32, 4).init(&device) };
    let inputs = Tensor::<2>::random([16, 8], burn::tensor::Distribution::Normal(0.0, 1.0), &device) * args.scale;
    let targets = Tensor::<2>::random([16, 4], burn::tensor::Distribution::Normal(0.0, 1.0), &device);

    let recorder = Recorder::new().torch_names(true).steps(args.steps);
    let recorder = match args.every {
        Some(every) => recorder.every(every),
        None => recorder,
    };
    let recorder = match args.shard_bytes {
        Some(bytes) => recorder.shard_bytes(bytes),
        None => recorder,
    };
    let mut recorder = recorder.stream_to(&args.out, Dump::builder().experiment("record_long_run"))?;
    let mut optimizer = SgdConfig::new().init();
    recorder.params(&model)?;
    for k in 1..=args.steps {
        let loss = {
            let _listening = (k == 1).then(|| recorder.listen());
            (model.forward(inputs.clone()) - targets.clone()).powi_scalar(2).mean()
        };
        recorder.loss(k, &loss)?;
        let grads = loss.backward();
        if k == 1 {
            recorder.grads(&model, &grads)?;
        }
        recorder.grad_norms(k, &model, &grads)?;
        let grads = GradientsParams::from_grads(grads, &model);
        model = optimizer.step(0.05, model, grads);
        recorder.step(k, &model)?;
    }
    println!("{}", recorder.finish()?.display());
    Ok(())
}
