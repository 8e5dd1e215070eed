//! p20: burn's Adam and AdaGrad default `epsilon` to 1e-5 (PyTorch: 1e-8 and 1e-10). The step
//! `lr·m̂/(√v̂ + ε)` of a parameter whose gradient is near ε shrinks silently.
use burn::module::Param;
use burn::optim::{AdaGradConfig, AdamConfig, AdamWConfig, GradientsParams, RmsPropConfig};
use burn::tensor::Tensor;
use pita_lab::dump_builder;
use pita::hparams::{assert_torch_hparams, config_line, hparam};
use pita_lab::inputs::inputs_sha256;
use pita_lab::{device, tensor, values};

// book:begin setup
const W0: [f32; 4] = [0.0, 0.0, 0.0, 0.0];
const GRAD: [f32; 4] = [1e-6, 1e-4, 1e-2, 1.0]; // loss = Σ GRAD·w, so w.grad is exactly GRAD
const LR: f64 = 1e-3; // PyTorch Adam's default lr
const STEPS: usize = 3;
// book:end

fn main() -> Result<(), pita::Error> {
    let args = pita_lab::args::Args::parse(&["adam-port", "adam-fixed", "adagrad-port", "adagrad-fixed", "guard", "defaults"]);
    if args.variant == "defaults" {
        // book:begin defaults
        println!("AdamConfig::new()    epsilon={:e}", hparam(&AdamConfig::new(), "epsilon").unwrap() as f32);
        println!("AdamWConfig::new()   epsilon={:e}", hparam(&AdamWConfig::new(), "epsilon").unwrap() as f32);
        println!("RmsPropConfig::new() epsilon={:e}", hparam(&RmsPropConfig::new(), "epsilon").unwrap() as f32);
        println!("AdaGradConfig::new() epsilon={:e}", hparam(&AdaGradConfig::new(), "epsilon").unwrap() as f32);
        // book:end
        return Ok(());
    }
    let device = device();
    let input_sha256 = inputs_sha256(&[&W0, &GRAD]);
    let g: Tensor<1> = tensor(&GRAD, [4], &device);
    let mut w = Param::from_tensor(tensor(&W0, [4], &device));

    let (mut optimizer, epsilon) = match args.variant.as_str() {
        "adam-port" => {
            // book:begin adam_port
            let config = AdamConfig::new();
            // book:end
            println!("AdamConfig {}", config_line(&config));
            (config.init(), hparam(&config, "epsilon"))
        }
        "adam-fixed" => {
            // book:begin adam_fixed
            let config = AdamConfig::new().with_epsilon(1e-8);
            // book:end
            println!("AdamConfig {}", config_line(&config));
            (config.init(), hparam(&config, "epsilon"))
        }
        "adagrad-port" => {
            // book:begin adagrad_port
            let config = AdaGradConfig::new();
            // book:end
            println!("AdaGradConfig {}", config_line(&config));
            (config.init(), hparam(&config, "epsilon"))
        }
        "adagrad-fixed" => {
            // book:begin adagrad_fixed
            let config = AdaGradConfig::new().with_epsilon(1e-10);
            // book:end
            println!("AdaGradConfig {}", config_line(&config));
            (config.init(), hparam(&config, "epsilon"))
        }
        "guard" => {
            // book:begin guard
            let config = AdamConfig::new();
            assert_torch_hparams(&config, &[("beta_1", 0.9), ("beta_2", 0.999), ("epsilon", 1e-8)]);
            // book:end
            (config.init(), hparam(&config, "epsilon"))
        }
        _ => unreachable!("Args::parse accepts only the listed variants"),
    };

    let mut grad = None;
    // book:begin steps
    for step in 1..=STEPS {
        let loss = (g.clone() * w.val()).sum();
        let grads = loss.backward();
        grad = w.grad(&grads);
        let grads = GradientsParams::from_grads(grads, &w);
        w = optimizer.step(LR, w, grads);
        println!("step {step} w {:?}", values(w.val()));
    }
    // book:end

    let epsilon = epsilon.expect("every optimizer config here has an epsilon") as f32;
    let mut dump = dump_builder("p20", &args.variant, &input_sha256, &device)
        .metadata("epsilon", epsilon)
        .metadata("lr", LR)
        .metadata("steps", STEPS).build()?;
    dump.tensor("w", w.val())?.tensor("w.grad", grad.expect("w.grad"))?;
    dump.write(&args.out)?;
    Ok(())
}
