//! p20a: Adam with PyTorch's lr, betas and epsilon still drifts from `torch.optim.Adam`, because
//! burn computes the bias corrections `1 - β^t` in f32 (PyTorch: Python floats, i.e. f64).
use burn::module::Param;
use burn::optim::{AdamConfig, GradientsParams};
use burn::tensor::Tensor;
use pita_lab::dump_builder;
use pita::hparams::{config_line, hparam};
use pita_lab::inputs::{inputs_sha256, ramp};
use pita_lab::{device, tensor, values};

// book:begin setup
const LR: f64 = 0.1;
const BETA_1: f32 = 0.9; // AdamConfig's default, the same as PyTorch's
const BETA_2: f32 = 0.999;
const EPSILON: f32 = 1e-8;
const STEPS: usize = 10;
// book:end

/// One Adam step as burn's `AdaptiveMomentum::transform` writes it, but with the bias corrections
/// computed in f64 from the same f32 betas.
// book:begin adam_f64
fn adam_step(w: Tensor<1>, g: Tensor<1>, m: Tensor<1>, v: Tensor<1>, t: i32) -> (Tensor<1>, Tensor<1>, Tensor<1>) {
    let m = m.mul_scalar(BETA_1).add(g.clone().mul_scalar(1.0 - BETA_1));
    let v = v.mul_scalar(BETA_2).add(g.square().mul_scalar(1.0 - BETA_2));
    let bias_correction2_sqrt = (1.0 - (BETA_2 as f64).powi(t)).sqrt(); // f64, like PyTorch
    let combined_factor = bias_correction2_sqrt / (1.0 - (BETA_1 as f64).powi(t));
    let update = m.clone().mul_scalar(combined_factor)
        .div(v.clone().sqrt().add_scalar(EPSILON as f64 * bias_correction2_sqrt));
    (w - update.mul_scalar(LR), m, v)
}
// book:end

fn main() -> Result<(), pita::Error> {
    let args = pita_lab::args::Args::parse(&["port", "fixed"]);
    let device = device();
    let (w0, grad) = (ramp(4, 0), ramp(4, 6)); // loss = Σ grad·w, so w.grad is exactly grad
    let input_sha256 = inputs_sha256(&[&w0, &grad]);
    let g: Tensor<1> = tensor(&grad, [4], &device);
    let mut w = Param::from_tensor(tensor(&w0, [4], &device));
    let mut last_grad = None;
    // What the optimizer actually uses: read back from the burn config for the port.
    let mut used = [BETA_1 as f64, BETA_2 as f64, EPSILON as f64];

    if args.variant == "port" {
        // book:begin port
        let config = AdamConfig::new().with_beta_1(BETA_1).with_beta_2(BETA_2).with_epsilon(EPSILON);
        let mut optimizer = config.init();
        for step in 1..=STEPS {
            let loss = (g.clone() * w.val()).sum();
            let grads = loss.backward();
            last_grad = w.grad(&grads);
            let grads = GradientsParams::from_grads(grads, &w);
            w = optimizer.step(LR, w, grads);
            println!("step {step} w {:?}", values(w.val()));
        }
        // book:end
        println!("AdamConfig {}", config_line(&config));
        used = ["beta_1", "beta_2", "epsilon"].map(|key| hparam(&config, key).expect("AdamConfig field"));
    } else {
        let mut w_inner = w.val().inner();
        let (mut m, mut v) = (w_inner.zeros_like(), w_inner.zeros_like());
        // book:begin fixed
        for step in 1..=STEPS {
            let loss = (g.clone() * w.val()).sum();
            let grads = loss.backward();
            let grad = w.grad(&grads).expect("w.grad");
            last_grad = Some(grad.clone());
            (w_inner, m, v) = adam_step(w.val().inner(), grad, m, v, step as i32);
            w = Param::from_tensor(w_inner.clone().autodiff());
            println!("step {step} w {:?}", values(w.val()));
        }
        // book:end
    }

    let mut dump = dump_builder("p20a", &args.variant, &input_sha256, &device)
        .metadata("lr", LR)
        .metadata("beta_1", used[0] as f32)
        .metadata("beta_2", used[1] as f32)
        .metadata("epsilon", used[2] as f32)
        .metadata("steps", STEPS).build()?;
    dump.tensor("w", w.val())?.tensor("w.grad", last_grad.expect("w.grad"))?;
    dump.write(&args.out)?;
    Ok(())
}
