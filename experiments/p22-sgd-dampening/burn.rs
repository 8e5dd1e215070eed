//! p22: burn's `MomentumConfig` defaults to dampening 0.1 (PyTorch SGD: 0). From the second step on
//! the gradient enters the velocity at 0.9 weight, so every step after the first is shorter.
use burn::module::Param;
use burn::optim::momentum::MomentumConfig;
use burn::optim::{GradientsParams, SgdConfig};
use burn::tensor::Tensor;
use pita_lab::dump_builder;
use pita::hparams::{assert_torch_hparams, config_line, hparam};
use pita_lab::inputs::inputs_sha256;
use pita_lab::{device, tensor, values};

// book:begin setup
const W0: [f32; 4] = [0.0, 0.0, 0.0, 0.0];
const GRAD: [f32; 4] = [1.0, -0.5, 0.25, 2.0]; // loss = Σ GRAD·w: the same gradient every step
const LR: f64 = 0.1;
const STEPS: usize = 3;
// book:end

fn main() -> Result<(), pita::Error> {
    let args = pita_lab::args::Args::parse(&["sgd-port", "sgd-fixed", "guard"]);
    let device = device();
    let input_sha256 = inputs_sha256(&[&W0, &GRAD]);
    let g: Tensor<1> = tensor(&GRAD, [4], &device);
    let mut w = Param::from_tensor(tensor(&W0, [4], &device));

    let config = match args.variant.as_str() {
        "sgd-port" => {
            // book:begin port
            let config = SgdConfig::new().with_momentum(Some(MomentumConfig::new().with_momentum(0.9)));
            // book:end
            config
        }
        "sgd-fixed" => {
            // book:begin fixed
            let momentum = MomentumConfig::new().with_momentum(0.9).with_dampening(0.0);
            let config = SgdConfig::new().with_momentum(Some(momentum));
            // book:end
            config
        }
        "guard" => {
            // book:begin guard
            let config = SgdConfig::new().with_momentum(Some(MomentumConfig::new().with_momentum(0.9)));
            let torch = [("momentum.momentum", 0.9), ("momentum.dampening", 0.0), ("momentum.nesterov", 0.0)];
            assert_torch_hparams(&config, &torch);
            // book:end
            config
        }
        _ => unreachable!("Args::parse accepts only the listed variants"),
    };
    println!("SgdConfig {}", config_line(&config));
    let mut optimizer = config.init();

    let mut dump = dump_builder("p22", &args.variant, &input_sha256, &device)
        .metadata("momentum", hparam(&config, "momentum.momentum").expect("momentum"))
        .metadata("dampening", hparam(&config, "momentum.dampening").expect("dampening"))
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
