//! p08a: burn's `LstmConfig` and `GruConfig` default to `Initializer::XavierNormal { gain: 1.0 }`
//! for every gate weight and bias, with each gate Linear's own fans; PyTorch's `nn.LSTM` and
//! `nn.GRU` draw every weight and bias from U(±1/√hidden_size). Each parameter's statistics
//! (std, min, max, the fraction beyond 1/√H, the KS distance to U(±1/√H)) go into the dump's
//! metadata; the dump's tensors are the fractions beyond the bound, which do not depend on the draw.
use burn::nn::{GateController, GruConfig, Initializer, Linear, LstmConfig};
use burn::tensor::{Device, TensorData};
use pita_lab::inputs::inputs_sha256;
use pita_lab::{device, dump_builder, values};

// book:begin setup
const INPUT: usize = 64;
const HIDDEN: usize = 256;
const SEED: u64 = 0;
// book:end

/// One parameter tensor's statistics, in f64, computed like `pytorch.py`'s `stats`.
struct Stats {
    numel: usize,
    std: f64,
    min: f64,
    max: f64,
    /// The fraction of |v| above `bound`.
    beyond: f64,
    /// Kolmogorov–Smirnov distance of the values to U(-bound, bound).
    ks: f64,
}

fn stats(values: &[f32], bound: f64) -> Stats {
    let mut v: Vec<f64> = values.iter().map(|x| *x as f64).collect();
    let n = v.len() as f64;
    let mean = v.iter().sum::<f64>() / n;
    let var = v.iter().map(|x| (x - mean) * (x - mean)).sum::<f64>() / n;
    let beyond = v.iter().filter(|x| x.abs() > bound).count() as f64 / n;
    v.sort_by(f64::total_cmp);
    let ks = v.iter().enumerate().fold(0.0f64, |d, (i, x)| {
        let cdf = ((x + bound) / (2.0 * bound)).clamp(0.0, 1.0);
        d.max((i + 1) as f64 / n - cdf).max(cdf - i as f64 / n)
    });
    Stats { numel: v.len(), std: var.sqrt(), min: v[0], max: v[v.len() - 1], beyond, ks }
}

/// A named parameter with the fans of the Linear that holds it (burn's `[d_input, d_output]`).
struct Parameter {
    name: String,
    is_bias: bool,
    fan_in: usize,
    fan_out: usize,
    values: Vec<f32>,
}

/// The weight and bias of one gate Linear, named `<gate>.<transform>.weight|bias`.
fn linear_parameters(prefix: &str, linear: &Linear) -> Vec<Parameter> {
    let [fan_in, fan_out] = linear.weight.val().dims();
    let weight = Parameter { name: format!("{prefix}.weight"), is_bias: false, fan_in, fan_out, values: values(linear.weight.val()) };
    let bias = linear.bias.as_ref().expect("the gates have biases");
    let bias = Parameter { name: format!("{prefix}.bias"), is_bias: true, fan_in, fan_out, values: values(bias.val()) };
    vec![weight, bias]
}

/// Every parameter of the gates, in the order gate → input/hidden transform → weight, bias.
fn gate_parameters(gates: &[(&str, &GateController)]) -> Vec<Parameter> {
    gates
        .iter()
        .flat_map(|(gate, controller)| {
            let mut found = linear_parameters(&format!("{gate}.input_transform"), &controller.input_transform);
            found.extend(linear_parameters(&format!("{gate}.hidden_transform"), &controller.hidden_transform));
            found
        })
        .collect()
}

/// The LSTM's gate parameters, the initializer its config held and its hidden size.
fn lstm_parameters(fixed: bool, device: &Device) -> (Vec<Parameter>, Initializer, usize) {
    let config = if fixed {
        // book:begin lstm-fixed
        let bound = 1.0 / (HIDDEN as f64).sqrt(); // nn.LSTM: U(-1/√hidden_size, 1/√hidden_size)
        let config = LstmConfig::new(INPUT, HIDDEN, true)
            .with_initializer(Initializer::Uniform { min: -bound, max: bound });
        // book:end
        config
    } else {
        // book:begin lstm-port
        let config = LstmConfig::new(INPUT, HIDDEN, true); // bias = true, like nn.LSTM
        // book:end
        config
    };
    let lstm = config.init(device);
    let forget = lstm.forget_gate.as_ref().expect("an uncoupled LSTM has a forget gate");
    let gates = [("input_gate", &lstm.input_gate), ("forget_gate", forget), ("cell_gate", &lstm.cell_gate), ("output_gate", &lstm.output_gate)];
    (gate_parameters(&gates), config.initializer.clone(), lstm.d_hidden)
}

/// The GRU's gate parameters, the initializer its config held and its hidden size.
fn gru_parameters(fixed: bool, device: &Device) -> (Vec<Parameter>, Initializer, usize) {
    let config = if fixed {
        // book:begin gru-fixed
        let bound = 1.0 / (HIDDEN as f64).sqrt(); // nn.GRU: U(-1/√hidden_size, 1/√hidden_size)
        let config = GruConfig::new(INPUT, HIDDEN, true)
            .with_initializer(Initializer::Uniform { min: -bound, max: bound });
        // book:end
        config
    } else {
        // book:begin gru-port
        let config = GruConfig::new(INPUT, HIDDEN, true); // bias = true, like nn.GRU
        // book:end
        config
    };
    let gru = config.init(device);
    let gates = [("reset_gate", &gru.reset_gate), ("update_gate", &gru.update_gate), ("new_gate", &gru.new_gate)];
    (gate_parameters(&gates), config.initializer.clone(), gru.d_hidden)
}

/// Comma-joined values, each in Rust's shortest round-trip form.
fn joined<T: std::fmt::Debug>(values: impl Iterator<Item = T>) -> String {
    values.map(|v| format!("{v:?}")).collect::<Vec<_>>().join(",")
}

fn main() -> Result<(), pita::Error> {
    let args = pita_lab::args::Args::parse(&["lstm-port", "lstm-fixed", "gru-port", "gru-fixed"]);
    let (rnn, how) = args.variant.split_once('-').expect("variants are <rnn>-<port|fixed>");
    let device = device();
    device.seed(SEED);
    let (parameters, initializer, hidden) = match rnn {
        "lstm" => lstm_parameters(how == "fixed", &device),
        _ => gru_parameters(how == "fixed", &device),
    };
    let bound = 1.0 / (hidden as f64).sqrt();
    let found: Vec<Stats> = parameters.iter().map(|p| stats(&p.values, bound)).collect();

    println!("{} initializer: {initializer:?}; PyTorch's bound 1/sqrt(hidden_size) = {bound}", args.variant);
    println!("{:<34} {:>6} {:>10} {:>10} {:>10} {:>8}", "parameter", "numel", "std", "min", "max", "beyond");
    for (p, s) in parameters.iter().zip(&found) {
        println!("{:<34} {:>6} {:>10.6} {:>10.6} {:>10.6} {:>8.4}", p.name, s.numel, s.std, s.min, s.max, s.beyond);
    }
    let gain = match initializer {
        Initializer::XavierNormal { gain } => format!("{gain:?}"),
        _ => "None".to_string(),
    };
    let beyond = |bias: bool| -> Vec<f32> {
        parameters.iter().zip(&found).filter(|(p, _)| p.is_bias == bias).map(|(_, s)| s.beyond as f32).collect()
    };
    let (weight_beyond, bias_beyond) = (beyond(false), beyond(true));
    let input_sha256 = inputs_sha256(&[&[INPUT as f32, HIDDEN as f32, SEED as f32]]);
    let mut dump = dump_builder("p08a", &args.variant, &input_sha256, &device)
        .metadata("rnn", rnn)
        .metadata("input_size", INPUT)
        .metadata("hidden_size", hidden)
        .metadata("seed", SEED)
        .metadata("initializer", format!("{initializer:?}"))
        .metadata("gain", gain)
        .metadata("bound", format!("{bound:?}"))
        .metadata("params", parameters.iter().map(|p| p.name.as_str()).collect::<Vec<_>>().join(","))
        .metadata("is_bias", joined(parameters.iter().map(|p| p.is_bias)))
        .metadata("fan_in", joined(parameters.iter().map(|p| p.fan_in)))
        .metadata("fan_out", joined(parameters.iter().map(|p| p.fan_out)))
        .metadata("numel", joined(found.iter().map(|s| s.numel)))
        .metadata("std", joined(found.iter().map(|s| s.std)))
        .metadata("min", joined(found.iter().map(|s| s.min)))
        .metadata("max", joined(found.iter().map(|s| s.max)))
        .metadata("beyond", joined(found.iter().map(|s| s.beyond)))
        .metadata("ks", joined(found.iter().map(|s| s.ks)))
        .build()?;
    dump.data("weight.beyond_bound", TensorData::new(weight_beyond.clone(), [weight_beyond.len()]))?
        .data("bias.beyond_bound", TensorData::new(bias_beyond.clone(), [bias_beyond.len()]))?;
    dump.write(&args.out)?;
    Ok(())
}
