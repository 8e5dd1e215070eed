//! p34: a PyTorch LayerNorm and RMSNorm (safetensors) read with burn-store's SafetensorsStore and
//! PyTorchToBurnAdapter. The adapter renames a norm's `weight`/`bias` to burn's `gamma`/`beta`
//! only inside the modules it knows by struct name, burn's `RmsNorm` among them; a port's own
//! norm module under another name keeps `gamma` unmapped.
use burn::module::{Module, Param};
use burn::nn::{LayerNorm, LayerNormConfig, RmsNorm, RmsNormConfig};
use burn::store::{ApplyResult, ModuleSnapshot, PyTorchToBurnAdapter, SafetensorsStore};
use burn::tensor::{Device, Tensor};
use pita::load_check::assert_fully_loaded;
use pita_lab::dump_builder;
use pita_lab::inputs::{inputs_sha256, ramp};
use pita_lab::loaded::Parameters;
use pita_lab::{tensor, values};
use std::path::Path;

const D_MODEL: usize = 4;
const ROWS: usize = 3;
const EPS: f64 = 1e-5;

// book:begin model
#[derive(Module, Debug)]
struct Net {
    ln: LayerNorm,
    rms: RmsNorm,
}

impl Net {
    fn new(device: &Device) -> Self {
        Net {
            ln: LayerNormConfig::new(D_MODEL).with_epsilon(EPS).init(device),
            rms: RmsNormConfig::new(D_MODEL).with_epsilon(EPS).init(device),
        }
    }

    fn forward(&self, x: Tensor<2>) -> (Tensor<2>, Tensor<2>) {
        (self.ln.forward(x.clone()), self.rms.forward(x))
    }
}
// book:end

// book:begin own
/// A port's own RMSNorm, written after PyTorch's class, its scale named like burn's.
#[derive(Module, Debug)]
struct RMSNorm {
    gamma: Param<Tensor<1>>,
    eps: f64,
}

impl RMSNorm {
    fn new(d_model: usize, eps: f64, device: &Device) -> Self {
        RMSNorm { gamma: Param::from_tensor(Tensor::ones([d_model], device)), eps }
    }

    fn forward(&self, x: Tensor<2>) -> Tensor<2> {
        let rms = (x.clone().square().mean_dim(1) + self.eps).sqrt();
        x / rms * self.gamma.val().unsqueeze()
    }
}

#[derive(Module, Debug)]
struct OwnNet {
    ln: LayerNorm,
    rms: RMSNorm,
}
// book:end

// book:begin own_fixed
/// The same module with its scale under PyTorch's name: the file's `rms.weight` matches as it is.
#[derive(Module, Debug)]
struct WeightRMSNorm {
    weight: Param<Tensor<1>>,
    eps: f64,
}
// book:end

impl WeightRMSNorm {
    fn new(d_model: usize, eps: f64, device: &Device) -> Self {
        WeightRMSNorm { weight: Param::from_tensor(Tensor::ones([d_model], device)), eps }
    }

    fn forward(&self, x: Tensor<2>) -> Tensor<2> {
        let rms = (x.clone().square().mean_dim(1) + self.eps).sqrt();
        x / rms * self.weight.val().unsqueeze()
    }
}

#[derive(Module, Debug)]
struct OwnFixedNet {
    ln: LayerNorm,
    rms: WeightRMSNorm,
}

/// Loads `path` into `module` through PyTorchToBurnAdapter, the file's names as PyTorch wrote them.
fn load(module: &mut impl ModuleSnapshot, path: &Path, partial: bool) -> ApplyResult {
    // book:begin load
    let mut store = SafetensorsStore::from_file(path)
        .with_from_adapter(PyTorchToBurnAdapter)
        .allow_partial(partial);
    // book:end
    module.load_from(&mut store).unwrap_or_else(|e| panic!("load norms.safetensors: {e}"))
}

fn main() -> Result<(), pita::Error> {
    let args = pita_lab::args::Args::parse(&["port", "own", "own-partial", "guard", "own-fixed"]);
    let device = Device::flex(); // inference only
    let x = ramp(ROWS * D_MODEL, 0);
    let params: Vec<Vec<f32>> = [(4, 8), (4, 2), (4, 12)]
        .iter()
        .map(|&(n, start)| ramp(n, start).iter().map(|v| v / 4.0).collect())
        .collect();
    let mut hashed: Vec<&[f32]> = vec![&x];
    hashed.extend(params.iter().map(|p| p.as_slice()));
    let input_sha256 = inputs_sha256(&hashed);
    let path = args.out.join("norms.safetensors");
    let x = tensor(&x, [ROWS, D_MODEL], &device);

    let (report, before, kept_initial, ln, rms) = if args.variant == "port" {
        let mut net = Net::new(&device);
        let before = Parameters::of(&net);
        // book:begin port
        let report = load(&mut net, &path, false);
        // book:end
        let kept = before.unchanged_in(&net);
        println!("rms.gamma {:?}", values(net.rms.gamma.val()));
        let (ln, rms) = net.forward(x);
        (report, before, kept, ln, rms)
    } else if args.variant == "own-fixed" {
        let mut net = OwnFixedNet { ln: LayerNormConfig::new(D_MODEL).with_epsilon(EPS).init(&device), rms: WeightRMSNorm::new(D_MODEL, EPS, &device) };
        let before = Parameters::of(&net);
        let report = load(&mut net, &path, false);
        let kept = before.unchanged_in(&net);
        println!("rms.weight {:?}", values(net.rms.weight.val()));
        let (ln, rms) = (net.ln.forward(x.clone()), net.rms.forward(x));
        (report, before, kept, ln, rms)
    } else {
        let mut net = OwnNet { ln: LayerNormConfig::new(D_MODEL).with_epsilon(EPS).init(&device), rms: RMSNorm::new(D_MODEL, EPS, &device) };
        let before = Parameters::of(&net);
        let report = match args.variant.as_str() {
            "own" => load(&mut net, &path, false),
            "own-partial" => load(&mut net, &path, true),
            "guard" => {
                // book:begin guard
                let report = load(&mut net, &path, true);
                assert_fully_loaded(&report);
                // book:end
                report
            }
            _ => unreachable!("Args::parse accepts only the listed variants"),
        };
        let kept = before.unchanged_in(&net);
        println!("rms.gamma {:?}", values(net.rms.gamma.val()));
        let (ln, rms) = (net.ln.forward(x.clone()), net.rms.forward(x));
        (report, before, kept, ln, rms)
    };
    println!("applied {:?}", report.applied);
    println!("missing {:?}", report.missing.iter().map(|(p, _)| p).collect::<Vec<_>>());
    println!("unused {:?}", report.unused);
    println!("left at their initial values: {kept_initial:?}");
    println!("ln {:?}", values(ln.clone()));
    println!("rms {:?}", values(rms.clone()));

    let mut dump = dump_builder("p34", &args.variant, &input_sha256, &device)
        .metadata("applied", report.applied.join(","))
        .metadata("missing", report.missing.iter().map(|(p, _)| p.as_str()).collect::<Vec<_>>().join(","))
        .metadata("unused", report.unused.join(","))
        .metadata("parameters", before.paths().join(","))
        .metadata("kept_initial", kept_initial.join(","))
        .build()?;
    dump.tensor("ln", ln)?;
    dump.tensor("rms", rms)?;
    dump.write(&args.out)?;
    Ok(())
}
