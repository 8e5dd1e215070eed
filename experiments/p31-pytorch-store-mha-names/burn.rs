//! p31: a PyTorch state_dict (torch.save) with MultiheadAttention, InstanceNorm1d and PReLU, read
//! with burn's PytorchStore. PyTorchToBurnAdapter transposes Linear weights and renames BatchNorm,
//! LayerNorm, GroupNorm and RmsNorm parameters; it does not split MHA's packed `in_proj`, rename
//! `out_proj`, InstanceNorm's `weight`/`bias` or PReLU's `weight`.
use burn::module::Module;
use burn::nn::attention::{MhaInput, MultiHeadAttention, MultiHeadAttentionConfig};
use burn::nn::{InstanceNorm, InstanceNormConfig, PRelu, PReluConfig};
use burn::store::burn_pack::Tensor as PackTensor;
use burn::store::{bridge, ModuleSnapshot, ModuleStore, PyTorchToBurnAdapter, PytorchStore};
use burn::tensor::{Device, Tensor, TensorData};
use pita_lab::dump_builder;
use pita_lab::inputs::{inputs_sha256, ramp};
use pita::load_check::assert_fully_loaded;
use pita_lab::{tensor, values};

const D_MODEL: usize = 4;
const N_HEADS: usize = 2;
const SEQ: usize = 3;
const SEED: u64 = 0;

// book:begin model
#[derive(Module, Debug)]
struct Net {
    attn: MultiHeadAttention,
    norm: InstanceNorm,
    act: PRelu,
}

impl Net {
    fn new(device: &Device) -> Self {
        Net {
            attn: MultiHeadAttentionConfig::new(D_MODEL, N_HEADS).with_dropout(0.0).init(device),
            norm: InstanceNormConfig::new(SEQ).with_affine(true).init(device),
            act: PReluConfig::new().init(device),
        }
    }

    fn forward(&self, x: Tensor<3>) -> Tensor<3> {
        let out = self.attn.forward(MhaInput::self_attn(x)).context;
        self.act.forward(self.norm.forward(out))
    }
}
// book:end

// book:begin torch_names
/// PyTorch's names and packing, turned into burn's: MHA's `in_proj_*` split by rows into
/// query/key/value, `out_proj` → `output`, InstanceNorm `weight`/`bias` → `gamma`/`beta`,
/// PReLU `weight` → `alpha`. Layouts stay PyTorch's; PyTorchToBurnAdapter transposes later.
fn torch_to_burn_names(store: &mut PytorchStore) -> Vec<PackTensor> {
    let mut tensors = Vec::new();
    for (name, tensor) in store.get_all_tensors().expect("read net.pt") {
        let data = pita_lab::compat::stored_tensor_data(tensor);
        let burn_name = match name.as_str() {
            "attn.in_proj_weight" | "attn.in_proj_bias" => {
                let kind = if name.ends_with("weight") { "weight" } else { "bias" };
                let (shape, values) = (data.shape().to_vec(), data.try_to_vec::<f32>().expect("f32"));
                let part = values.len() / 3; // rows 0..E query, E..2E key, 2E..3E value
                let mut part_shape = shape;
                part_shape[0] /= 3;
                for (i, linear) in ["query", "key", "value"].iter().enumerate() {
                    let slice = values[i * part..(i + 1) * part].to_vec();
                    let data = TensorData::new(slice, part_shape.clone());
                    tensors.push(bridge::from_data(data, format!("attn.{linear}.{kind}"), None));
                }
                continue;
            }
            "attn.out_proj.weight" => "attn.output.weight",
            "attn.out_proj.bias" => "attn.output.bias",
            "norm.weight" => "norm.gamma",
            "norm.bias" => "norm.beta",
            "act.weight" => "act.alpha",
            other => other,
        };
        tensors.push(bridge::from_data(data, burn_name.to_string(), None));
    }
    tensors
}
// book:end

fn main() -> Result<(), pita::Error> {
    let args = pita_lab::args::Args::parse(&["port", "partial", "guard", "fixed"]);
    let device = Device::flex(); // inference only: no autodiff, so no dropout either
    device.seed(SEED); // the initial values that a partial load leaves behind are reproducible
    let x = ramp(12, 0);
    let params: Vec<Vec<f32>> = [(48, 0), (12, 48), (16, 60), (4, 76), (3, 6), (3, 3), (1, 6)]
        .iter()
        .map(|&(n, start)| ramp(n, start).iter().map(|v| v / 8.0).collect())
        .collect();
    let mut hashed: Vec<&[f32]> = vec![&x];
    hashed.extend(params.iter().map(|p| p.as_slice()));
    let input_sha256 = inputs_sha256(&hashed);
    let path = args.out.join("net.pt");

    let mut net = Net::new(&device);
    let report = match args.variant.as_str() {
        "port" => {
            // book:begin port
            let mut store = PytorchStore::from_file(&path);
            net.load_from(&mut store).unwrap_or_else(|e| panic!("load net.pt: {e}"))
            // book:end
        }
        "partial" => {
            // book:begin partial
            let mut store = PytorchStore::from_file(&path).allow_partial(true);
            let result = net.load_from(&mut store).expect("load net.pt");
            // book:end
            println!("applied {:?}", result.applied);
            println!("missing {:?}", result.missing.iter().map(|(p, _)| p).collect::<Vec<_>>());
            println!("unused {:?}", result.unused);
            result
        }
        "guard" => {
            // book:begin guard
            let mut store = PytorchStore::from_file(&path).allow_partial(true);
            let result = net.load_from(&mut store).expect("load net.pt");
            assert_fully_loaded(&result);
            // book:end
            result
        }
        "fixed" => {
            // book:begin fixed
            let mut store = PytorchStore::from_file(&path);
            let tensors = torch_to_burn_names(&mut store);
            let result = net.apply(tensors, None, Some(Box::new(PyTorchToBurnAdapter)), false);
            assert_fully_loaded(&result);
            // book:end
            println!("applied {:?}", result.applied);
            result
        }
        _ => unreachable!("Args::parse accepts only the listed variants"),
    };
    let y = net.forward(tensor(&x, [1, SEQ, D_MODEL], &device));
    println!("y {:?}", values(y.clone()));

    let mut dump = dump_builder("p31", &args.variant, &input_sha256, &device)
        .metadata("applied", report.applied.join(","))
        .metadata("missing", report.missing.iter().map(|(p, _)| p.as_str()).collect::<Vec<_>>().join(","))
        .metadata("unused", report.unused.join(",")).build()?;
    dump.tensor("y", y)?;
    dump.write(&args.out)?;
    Ok(())
}
