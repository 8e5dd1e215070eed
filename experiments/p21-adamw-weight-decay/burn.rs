//! p21: burn's AdamW defaults to weight decay 1e-4 (PyTorch: 1e-2). The decoupled decay
//! `w·(1 − lr·λ)` is 100 times weaker; a parameter with zero gradient shows it alone.
use burn::module::{Module, Param};
use burn::optim::{AdamWConfig, GradientsParams};
use burn::tensor::Tensor;
use pita_lab::dump_builder;
use pita::hparams::{assert_torch_hparams, config_line, hparam};
use pita_lab::inputs::inputs_sha256;
use pita_lab::{device, tensor, values};

// book:begin setup
const W0: [f32; 2] = [1.0, -0.5];
const GRAD: [f32; 2] = [0.5, 0.25]; // loss = Σ GRAD·w + 0·Σ idle
const IDLE0: [f32; 2] = [1.0, -2.0]; // in the graph, gradient 0 (like embedding rows absent from the batch)
const LR: f64 = 0.1;
const STEPS: usize = 2;
// book:end

#[derive(Module, Debug)]
struct Params {
    w: Param<Tensor<1>>,
    idle: Param<Tensor<1>>,
}

fn main() -> Result<(), pita::Error> {
    let args = pita_lab::args::Args::parse(&["adamw-port", "adamw-decay", "adamw-fixed", "guard"]);
    let device = device();
    let input_sha256 = inputs_sha256(&[&W0, &GRAD, &IDLE0]);
    let g: Tensor<1> = tensor(&GRAD, [2], &device);
    let mut params = Params {
        w: Param::from_tensor(tensor(&W0, [2], &device)),
        idle: Param::from_tensor(tensor(&IDLE0, [2], &device)),
    };

    let config = match args.variant.as_str() {
        "adamw-port" => {
            // book:begin port
            let config = AdamWConfig::new();
            // book:end
            config
        }
        "adamw-decay" => {
            // book:begin decay
            let config = AdamWConfig::new().with_weight_decay(0.01);
            // book:end
            config
        }
        "adamw-fixed" => {
            // book:begin fixed
            let config = AdamWConfig::new().with_weight_decay(0.01).with_epsilon(1e-8);
            // book:end
            config
        }
        "guard" => {
            // book:begin guard
            let config = AdamWConfig::new();
            assert_torch_hparams(&config, &[("weight_decay", 0.01), ("epsilon", 1e-8)]);
            // book:end
            config
        }
        _ => unreachable!("Args::parse accepts only the listed variants"),
    };
    println!("AdamWConfig {}", config_line(&config));
    let mut optimizer = config.init();

    // book:begin steps
    for step in 1..=STEPS {
        let loss = (g.clone() * params.w.val()).sum() + params.idle.val().sum().mul_scalar(0.0);
        let grads = GradientsParams::from_grads(loss.backward(), &params);
        params = optimizer.step(LR, params, grads);
        println!("step {step} w {:?} idle {:?}", values(params.w.val()), values(params.idle.val()));
    }
    // book:end

    let mut dump = dump_builder("p21", &args.variant, &input_sha256, &device)
        .metadata("weight_decay", hparam(&config, "weight_decay").expect("weight_decay") as f32)
        .metadata("epsilon", hparam(&config, "epsilon").expect("epsilon") as f32)
        .metadata("lr", LR)
        .metadata("steps", STEPS).build()?;
    dump.tensor("w", params.w.val())?
        .tensor("idle", params.idle.val())?
        .tensor("idle.start", tensor(&IDLE0, [2], &device))?;
    dump.write(&args.out)?;
    Ok(())
}
