//! p33: a PyTorch GRU's state_dict (safetensors) read with burn-store's SafetensorsStore and
//! PyTorchToBurnAdapter. PyTorch packs the three gates into `weight_ih_l0` / `weight_hh_l0` /
//! `bias_ih_l0` / `bias_hh_l0` ([3·H, …], rows r, z, n); burn's Gru holds one GateController per
//! gate, each with an `input_transform` and a `hidden_transform` Linear. Nothing maps one to the
//! other: the load fails, or, with allow_partial(true), leaves every gate at its initial value.
use burn::module::Module;
use burn::nn::{Gru, GruConfig};
use burn::store::burn_pack::Tensor as PackTensor;
use burn::store::{bridge, ApplyResult, ModuleSnapshot, ModuleStore, PyTorchToBurnAdapter, SafetensorsStore};
use burn::tensor::{Device, Tensor, TensorData};
use pita::load_check::assert_fully_loaded;
use pita_lab::dump_builder;
use pita_lab::inputs::{inputs_sha256, ramp};
use pita_lab::loaded::Parameters;
use pita_lab::{tensor, values};

const D_INPUT: usize = 3;
const D_HIDDEN: usize = 4;
const SEQ: usize = 5;
const BATCH: usize = 2;
const SEED: u64 = 0;

// book:begin model
#[derive(Module, Debug)]
struct Net {
    gru: Gru,
}

impl Net {
    fn new(config: GruConfig, device: &Device) -> Self {
        Net { gru: config.init(device) }
    }

    /// Every hidden state [batch, seq, hidden], and the last one, h_n [batch, hidden].
    fn forward(&self, x: Tensor<3>) -> (Tensor<3>, Tensor<2>) {
        let out = self.gru.forward(x, None); // burn's Gru returns only the hidden states
        let h_n = out.clone().slice([0..BATCH, SEQ - 1..SEQ, 0..D_HIDDEN]).squeeze_dim(1);
        (out, h_n)
    }
}
// book:end

// book:begin gate_order
/// The gates in the order PyTorch packs them: r (reset), z (update), n (new).
const TORCH_ORDER: [&str; 3] = ["reset_gate", "update_gate", "new_gate"];
// book:end
// book:begin declared_order
/// The order burn's `Gru` declares its gate fields: update, reset, new.
const DECLARED_ORDER: [&str; 3] = ["update_gate", "reset_gate", "new_gate"];
// book:end

// book:begin split_gates
/// PyTorch's packed GRU tensors under burn's names: each `[3·H, …]` tensor cut into three row
/// blocks, block k going to the gate `gates[k]`; `*_ih_l0` feed each gate's `input_transform`,
/// `*_hh_l0` its `hidden_transform`. Layouts stay PyTorch's ([out, in]): PyTorchToBurnAdapter
/// transposes every Linear weight when the tensors are applied.
fn split_gates(store: &mut SafetensorsStore, gates: [&str; 3]) -> Vec<PackTensor> {
    let mut tensors = Vec::new();
    for (name, tensor) in store.get_all_tensors().expect("read gru.safetensors") {
        let (module, packed) = name.rsplit_once('.').expect("a module's parameter");
        let (transform, param) = match packed {
            "weight_ih_l0" => ("input_transform", "weight"),
            "weight_hh_l0" => ("hidden_transform", "weight"),
            "bias_ih_l0" => ("input_transform", "bias"),
            "bias_hh_l0" => ("hidden_transform", "bias"),
            other => panic!("not a one-layer GRU parameter: {other}"),
        };
        let data = pita_lab::compat::stored_tensor_data(tensor);
        let mut shape = data.shape().to_vec();
        shape[0] /= gates.len(); // H rows per gate
        let values = data.try_to_vec::<f32>().expect("f32 tensor");
        for (block, gate) in values.chunks(values.len() / gates.len()).zip(gates) {
            let data = TensorData::new(block.to_vec(), shape.clone());
            tensors.push(bridge::from_data(data, format!("{module}.{gate}.{transform}.{param}"), None));
        }
    }
    tensors
}
// book:end

/// Loads the file split by `gates` and checks that every parameter was applied.
fn load_split(net: &mut Net, path: &std::path::Path, gates: [&str; 3]) -> ApplyResult {
    // book:begin fixed
    let mut store = SafetensorsStore::from_file(path);
    let tensors = split_gates(&mut store, gates);
    let result = net.apply(tensors, None, Some(Box::new(PyTorchToBurnAdapter)), false);
    assert_fully_loaded(&result);
    // book:end
    result
}

fn main() -> Result<(), pita::Error> {
    let args = pita_lab::args::Args::parse(&["port", "partial", "guard", "declared-order", "reset-before", "fixed"]);
    let device = Device::flex(); // inference only: no autodiff
    device.seed(SEED); // the initial values that a partial load leaves behind are reproducible
    let x = ramp(BATCH * SEQ * D_INPUT, 0);
    let params: Vec<Vec<f32>> = [(36, 0, 16.0), (48, 2, 16.0), (12, 1, 8.0), (12, 3, 8.0)]
        .iter()
        .map(|&(n, start, divisor)| ramp(n, start).iter().map(|v| v / divisor).collect())
        .collect();
    let mut hashed: Vec<&[f32]> = vec![&x];
    hashed.extend(params.iter().map(|p| p.as_slice()));
    let input_sha256 = inputs_sha256(&hashed);
    let path = args.out.join("gru.safetensors");

    // book:begin config
    let config = GruConfig::new(D_INPUT, D_HIDDEN, true); // reset_after: default
    // book:end
    let config = match args.variant.as_str() {
        // book:begin reset_before
        "reset-before" => config.with_reset_after(false),
        // book:end
        _ => config,
    };
    let mut net = Net::new(config, &device);
    let before = Parameters::of(&net);
    let report = match args.variant.as_str() {
        "port" => {
            // book:begin port
            let mut store = SafetensorsStore::from_file(&path).with_from_adapter(PyTorchToBurnAdapter);
            net.load_from(&mut store).unwrap_or_else(|e| panic!("load gru.safetensors: {e}"))
            // book:end
        }
        "partial" => {
            // book:begin partial
            let mut store = SafetensorsStore::from_file(&path)
                .with_from_adapter(PyTorchToBurnAdapter)
                .allow_partial(true);
            let result = net.load_from(&mut store).expect("load gru.safetensors");
            // book:end
            println!("applied {:?}", result.applied);
            println!("missing {:?}", result.missing.iter().map(|(p, _)| p).collect::<Vec<_>>());
            println!("unused {:?}", result.unused);
            result
        }
        "guard" => {
            // book:begin guard
            let mut store = SafetensorsStore::from_file(&path)
                .with_from_adapter(PyTorchToBurnAdapter)
                .allow_partial(true);
            let result = net.load_from(&mut store).expect("load gru.safetensors");
            assert_fully_loaded(&result);
            // book:end
            result
        }
        "declared-order" => load_split(&mut net, &path, DECLARED_ORDER),
        "reset-before" | "fixed" => load_split(&mut net, &path, TORCH_ORDER),
        _ => unreachable!("Args::parse accepts only the listed variants"),
    };
    let kept_initial = before.unchanged_in(&net);
    println!("reset_after {}", net.gru.reset_after);
    println!("parameters left at their initial values: {}/{}", kept_initial.len(), before.paths().len());
    let (out, h_n) = net.forward(tensor(&x, [BATCH, SEQ, D_INPUT], &device));
    println!("h_n {:?}", values(h_n.clone()));

    let mut dump = dump_builder("p33", &args.variant, &input_sha256, &device)
        .metadata("applied", report.applied.join(","))
        .metadata("missing", report.missing.iter().map(|(p, _)| p.as_str()).collect::<Vec<_>>().join(","))
        .metadata("unused", report.unused.join(","))
        .metadata("parameters", before.paths().join(","))
        .metadata("kept_initial", kept_initial.join(","))
        .metadata("reset_after", net.gru.reset_after) // as the layer holds it
        .build()?;
    dump.tensor("out", out)?;
    dump.tensor("h_n", h_n)?;
    dump.write(&args.out)?;
    Ok(())
}
