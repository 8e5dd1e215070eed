//! p23: burn's `RmsPropConfig::new()` has momentum 0.9 (PyTorch RMSprop: 0) and epsilon 1e-5
//! (PyTorch: 1e-8). The momentum buffer adds up the normalised steps, so w moves much farther.
use burn::module::Param;
use burn::optim::{GradientsParams, RmsPropConfig};
use burn::tensor::Tensor;
use pita_lab::dump_builder;
use pita::hparams::{assert_torch_hparams, config_line, hparam};
use pita_lab::inputs::inputs_sha256;
use pita_lab::{device, tensor, values};

// book:begin setup
const W0: [f32; 4] = [0.0, 0.0, 0.0, 0.0];
const GRAD: [f32; 4] = [1.0, -0.5, 0.25, 2.0]; // loss = Σ GRAD·w: the same gradient every step
const LR: f64 = 0.01; // PyTorch RMSprop's default lr
const STEPS: usize = 3;
// book:end

fn main() -> Result<(), pita::Error> {
    let args = pita_lab::args::Args::parse(&["rmsprop-port", "rmsprop-momentum", "rmsprop-fixed", "guard"]);
    let device = device();
    let input_sha256 = inputs_sha256(&[&W0, &GRAD]);
    let g: Tensor<1> = tensor(&GRAD, [4], &device);
    let mut w = Param::from_tensor(tensor(&W0, [4], &device));

    let config = match args.variant.as_str() {
        "rmsprop-port" => {
            // book:begin port
            let config = RmsPropConfig::new();
            // book:end
            config
        }
        "rmsprop-momentum" => {
            // book:begin momentum
            let config = RmsPropConfig::new().with_momentum(0.0);
            // book:end
            config
        }
        "rmsprop-fixed" => {
            // book:begin fixed
            let config = RmsPropConfig::new().with_momentum(0.0).with_epsilon(1e-8);
            // book:end
            config
        }
        "guard" => {
            // book:begin guard
            let config = RmsPropConfig::new();
            assert_torch_hparams(&config, &[("alpha", 0.99), ("momentum", 0.0), ("epsilon", 1e-8), ("centered", 0.0)]);
            // book:end
            config
        }
        _ => unreachable!("Args::parse accepts only the listed variants"),
    };
    println!("RmsPropConfig {}", config_line(&config));
    let mut optimizer = config.init();

    let mut dump = dump_builder("p23", &args.variant, &input_sha256, &device)
        .metadata("alpha", hparam(&config, "alpha").expect("alpha") as f32)
        .metadata("momentum", hparam(&config, "momentum").expect("momentum") as f32)
        .metadata("epsilon", hparam(&config, "epsilon").expect("epsilon") as f32)
        .metadata("lr", LR)
        .metadata("steps", STEPS).build()?;
    // book:begin steps
    for step in 1..=STEPS {
        let loss = (g.clone() * w.val()).sum();
        let grads = GradientsParams::from_grads(loss.backward(), &w);
        w = optimizer.step(LR, w, grads);
        println!("step {step} w {:?}", values(w.val()));
        dump.tensor(&format!("w.step{step}"), w.val())?;
    }
    // book:end
    dump.write(&args.out)?;
    Ok(())
}
