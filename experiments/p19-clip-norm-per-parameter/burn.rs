//! p19: gradient clipping by norm. burn's `GradientClipping::Norm` (set in the optimizer config)
//! clips each parameter tensor by its own L2 norm; `torch.nn.utils.clip_grad_norm_` clips all
//! gradients by one global norm.
use burn::grad_clipping::GradientClippingConfig;
use burn::module::{Module, Param};
use burn::optim::{GradientsParams, SgdConfig};
use burn::tensor::Tensor;
use pita::clip_norm::{assert_no_per_tensor_norm_clipping, clip_grad_norm};
use pita_lab::dump_builder;
use pita_lab::inputs::inputs_sha256;
use pita_lab::{device, tensor, values};

// book:begin setup
const W1: [f32; 2] = [1.0, -1.0];
const W2: [f32; 2] = [0.5, 2.0];
const A: [f32; 2] = [3.0, 4.0]; // loss = sum(w1·a) + sum(w2·b): w1.grad = a, w2.grad = b
const B: [f32; 2] = [6.0, 8.0];
const MAX_NORM: f32 = 1.0;
const LR: f64 = 1.0;
// book:end

// book:begin model
#[derive(Module, Debug)]
struct Net {
    w1: Param<Tensor<1>>,
    w2: Param<Tensor<1>>,
}
// book:end

fn main() -> Result<(), pita::Error> {
    let args = pita_lab::args::Args::parse(&["port", "global", "guard"]);
    let device = device();
    let input_sha256 = inputs_sha256(&[&W1, &W2, &A, &B]);
    let net = Net {
        w1: Param::from_tensor(tensor(&W1, [2], &device)),
        w2: Param::from_tensor(tensor(&W2, [2], &device)),
    };
    let (a, b) = (tensor(&A, [2], &device), tensor(&B, [2], &device));
    let loss = (net.w1.val() * a).sum() + (net.w2.val() * b).sum();
    let grads = GradientsParams::from_grads(loss.backward(), &net);
    let before = (net.w1.val(), net.w2.val());

    let net = match args.variant.as_str() {
        "port" => {
            // book:begin port
            let mut optim = SgdConfig::new()
                .with_gradient_clipping(Some(GradientClippingConfig::Norm(MAX_NORM)))
                .init();
            optim.step(LR, net, grads)
            // book:end
        }
        "global" => {
            // book:begin global
            let (grads, total_norm) = clip_grad_norm(&net, grads, MAX_NORM);
            println!("total_norm {total_norm}");
            let mut optim = SgdConfig::new().init(); // no gradient_clipping
            optim.step(LR, net, grads)
            // book:end
        }
        "guard" => {
            // book:begin guard
            let mut optim = SgdConfig::new()
                .with_gradient_clipping(Some(GradientClippingConfig::Norm(MAX_NORM)))
                .init();
            assert_no_per_tensor_norm_clipping(&optim);
            // book:end
            optim.step(LR, net, grads)
        }
        _ => unreachable!("Args::parse accepts only the listed variants"),
    };
    // With SGD, the update (before - after) / lr is the clipped gradient the optimizer used.
    let update1 = (before.0 - net.w1.val()) / LR;
    let update2 = (before.1 - net.w2.val()) / LR;
    println!("w1.update {:?}", values(update1.clone()));
    println!("w2.update {:?}", values(update2.clone()));
    println!("w1.step1 {:?}", values(net.w1.val()));
    println!("w2.step1 {:?}", values(net.w2.val()));

    let mut dump = dump_builder("p19", &args.variant, &input_sha256, &device)
        .metadata("max_norm", MAX_NORM)
        .metadata("lr", LR).build()?;
    dump.tensor("w1.update", update1)?.tensor("w2.update", update2)?;
    dump.tensor("w1.step1", net.w1.val())?.tensor("w2.step1", net.w2.val())?;
    dump.write(&args.out)?;
    Ok(())
}
