//! p10b: burn's RmsNorm defaults to epsilon 1e-5; PyTorch's RMSNorm (eps=None) uses the dtype's
//! machine epsilon. For activations with mean(x²) near 1e-5 the outputs differ by a visible scale.
use burn::nn::RmsNormConfig;
use pita_lab::dump_builder;
use pita_lab::inputs::{inputs_sha256, ramp};
use pita_lab::{device, tensor, values};

// book:begin setup
const D_MODEL: usize = 4;
const X_SMALL: [f32; D_MODEL] = [0.001, 0.002, 0.003, 0.004]; // small activations
// X_NORMAL = ramp(4, 0): -0.5, -0.4, -0.3, -0.2
// book:end

fn main() -> Result<(), pita::Error> {
    let args = pita_lab::args::Args::parse(&["port", "fixed"]);
    let device = device();
    let x_normal_values = ramp(D_MODEL, 0);
    let input_sha256 = inputs_sha256(&[&X_SMALL, &x_normal_values]);
    let x_small = tensor(&X_SMALL, [D_MODEL], &device);
    let x_normal = tensor(&x_normal_values, [D_MODEL], &device);
    let norm = match args.variant.as_str() {
        "port" => {
            // book:begin port
            let norm = RmsNormConfig::new(D_MODEL).init(&device);
            // book:end
            norm
        }
        "fixed" => {
            // book:begin fixed
            let norm = RmsNormConfig::new(D_MODEL)
                .with_epsilon(f32::EPSILON as f64) // torch.finfo(torch.float32).eps
                .init(&device);
            // book:end
            norm
        }
        _ => unreachable!("Args::parse accepts only the listed variants"),
    };
    println!("{norm}");
    let out_small = norm.forward(x_small.clone());
    let out_normal = norm.forward(x_normal.clone());
    println!("out.small  {:?}", values(out_small.clone()));
    println!("out.normal {:?}", values(out_normal.clone()));

    let mut dump = dump_builder("p10b", &args.variant, &input_sha256, &device)
        .metadata("epsilon", format!("{:?}", norm.epsilon)).build()?;
    dump.tensor("x.small", x_small)?
        .tensor("x.normal", x_normal)?
        .tensor("out.small", out_small)?
        .tensor("out.normal", out_normal)?;
    dump.write(&args.out)?;
    Ok(())
}
