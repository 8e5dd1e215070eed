//! p10a: burn's HardSigmoid defaults to alpha 0.2, beta 0.5 (`clamp(0.2·x + 0.5, 0, 1)`);
//! PyTorch's Hardsigmoid is `clamp(x/6 + 1/2, 0, 1)`.
use burn::nn::HardSigmoidConfig;
use burn::tensor::activation::hard_swish;
use pita_lab::dump_builder;
use pita_lab::inputs::inputs_sha256;
use pita_lab::{device, tensor, values};

// book:begin setup
const X: [f32; 7] = [-3.0, -2.0, -1.0, 0.0, 1.0, 2.0, 3.0];
// book:end

fn main() -> Result<(), pita::Error> {
    let args = pita_lab::args::Args::parse(&["port", "fixed"]);
    let device = device();
    let input_sha256 = inputs_sha256(&[&X]);
    let x = tensor(&X, [X.len()], &device);
    let layer = match args.variant.as_str() {
        "port" => {
            // book:begin port
            let layer = HardSigmoidConfig::new().init();
            // book:end
            layer
        }
        "fixed" => {
            // book:begin fixed
            let layer = HardSigmoidConfig::new().with_alpha(1.0 / 6.0).init(); // beta stays 0.5
            // book:end
            layer
        }
        _ => unreachable!("Args::parse accepts only the listed variants"),
    };
    println!("{layer}");
    let out = layer.forward(x.clone());
    let input = x.clone();
    println!("x   {:?}", X);
    println!("out {:?}", values(out.clone()));
    // book:begin hard_swish
    let swish = hard_swish(x); // burn's hard_swish, for contrast: x · hard_sigmoid(x, 1/6, 0.5)
    // book:end
    println!("hard_swish {:?}", values(swish.clone()));
    // the slope the layer holds, for the defaults table
    let mut dump = dump_builder("p10a", &args.variant, &input_sha256, &device)
        .metadata("alpha", layer.alpha)
        .build()?;
    dump.tensor("x", input)?.tensor("out", out)?.tensor("hard_swish", swish)?;
    dump.write(&args.out)?;
    Ok(())
}
