//! p08: `LinearConfig::with_initializer` initialises the bias with the same initializer as the
//! weight. Xavier-uniform on a 256→256 layer draws the bias from U(±√(6/512)) where PyTorch's
//! `xavier_uniform_(fc.weight)` leaves it at U(±1/√256).
use burn::nn::{Initializer, LinearConfig};
use burn::tensor::TensorData;
use pita_lab::inputs::inputs_sha256;
use pita_lab::{device, dump_builder, values};

// book:begin setup
const FAN_IN: usize = 256;
const FAN_OUT: usize = 256;
const SEED: u64 = 0;
// book:end

/// max |v|, the fraction of |v| above `bound`, and the standard deviation, in f64.
fn stats(values: &[f32], bound: f64) -> (f64, f32, f64) {
    let abs: Vec<f64> = values.iter().map(|v| (*v as f64).abs()).collect();
    let max = abs.iter().cloned().fold(0.0, f64::max);
    let beyond = abs.iter().filter(|v| **v > bound).count() as f64 / abs.len() as f64;
    let mean = values.iter().map(|v| *v as f64).sum::<f64>() / values.len() as f64;
    let var = values.iter().map(|v| (*v as f64 - mean).powi(2)).sum::<f64>() / values.len() as f64;
    (max, beyond as f32, var.sqrt())
}

fn main() -> Result<(), pita::Error> {
    let args = pita_lab::args::Args::parse(&["port", "fixed"]);
    let device = device();
    device.seed(SEED);
    let input_sha256 = inputs_sha256(&[&[FAN_IN as f32, FAN_OUT as f32]]);
    let fc = match args.variant.as_str() {
        "port" => {
            // book:begin port
            let fc = LinearConfig::new(FAN_IN, FAN_OUT)
                .with_initializer(Initializer::XavierUniform { gain: 1.0 })
                .init(&device);
            // book:end
            fc
        }
        "fixed" => {
            // book:begin fixed
            // The default config draws weight and bias like PyTorch's nn.Linear; then only the weight is re-drawn.
            let mut fc = LinearConfig::new(FAN_IN, FAN_OUT).init(&device);
            fc.weight = Initializer::XavierUniform { gain: 1.0 }.init_with([FAN_IN, FAN_OUT], Some(FAN_IN), Some(FAN_OUT), &device);
            // book:end
            fc
        }
        _ => unreachable!("Args::parse accepts only the listed variants"),
    };
    let weight = values(fc.weight.val());
    let bias = values(fc.bias.as_ref().expect("bias").val());
    let default_bound = 1.0 / (FAN_IN as f64).sqrt();
    let xavier_bound = (6.0 / (FAN_IN + FAN_OUT) as f64).sqrt();
    let (weight_max, weight_beyond, weight_std) = stats(&weight, xavier_bound);
    let (bias_max, bias_beyond, bias_std) = stats(&bias, default_bound);
    println!("default bound 1/sqrt(fan_in) = {default_bound:.6}, xavier bound sqrt(6/(fan_in+fan_out)) = {xavier_bound:.6}");
    println!("weight max|w| = {weight_max:.6}, std = {weight_std:.6}");
    println!("bias   max|b| = {bias_max:.6}, std = {bias_std:.6}");
    println!("bias.beyond_default_bound = {bias_beyond:.6}");
    println!("weight.beyond_xavier_bound = {weight_beyond:.6}");

    let mut dump = dump_builder("p08", &args.variant, &input_sha256, &device)
        .metadata("fan_in", FAN_IN)
        .metadata("fan_out", FAN_OUT)
        .metadata("seed", SEED)
        .metadata("default_bound", format!("{default_bound:?}"))
        .metadata("xavier_bound", format!("{xavier_bound:?}"))
        .metadata("bias_max_abs", format!("{bias_max:?}"))
        .metadata("weight_max_abs", format!("{weight_max:?}"))
        .metadata("bias_std", format!("{bias_std:?}"))
        .metadata("weight_std", format!("{weight_std:?}")).build()?;
    dump.data("bias.beyond_default_bound", TensorData::new(vec![bias_beyond], [1]))?
        .data("weight.beyond_xavier_bound", TensorData::new(vec![weight_beyond], [1]))?;
    dump.write(&args.out)?;
    Ok(())
}
