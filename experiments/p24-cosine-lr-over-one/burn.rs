//! p24: `CosineAnnealingLrSchedulerConfig::init` returns an Err for `initial_lr > 1` (PyTorch's
//! CosineAnnealingLR takes any lr); for a valid lr the two schedules agree.
use burn::lr_scheduler::cosine::CosineAnnealingLrSchedulerConfig;
use burn::tensor::Tensor;
use pita_lab::dump_builder;
use pita_lab::inputs::inputs_sha256;
use pita_lab::{device, tensor};

// book:begin setup
const LR_BIG: f64 = 2.0; // e.g. SGD on a loss with small gradients, or a scaled-lr recipe
const LR: f64 = 0.1;
const T_MAX: usize = 4;
const ITERS: usize = 6; // past T_MAX: the cosine goes on, it does not restart
// book:end

fn main() -> Result<(), pita::Error> {
    let args = pita_lab::args::Args::parse(&["cosine-big-port", "cosine-big-clamped", "cosine-big-fixed", "cosine", "cosine-shifted"]);
    let device = device();
    let input_sha256 = inputs_sha256(&[&[LR_BIG as f32, LR as f32]]);
    let mut lrs = Vec::new();
    let initial_lr = match args.variant.as_str() {
        "cosine-big-port" => {
            // book:begin port
            let mut scheduler = CosineAnnealingLrSchedulerConfig::new(LR_BIG, T_MAX).init().unwrap();
            for _ in 0..ITERS {
                lrs.push(scheduler.step().base()); // the lr this iteration trains with
            }
            // book:end
            LR_BIG
        }
        "cosine-big-clamped" => {
            // book:begin clamped
            let mut scheduler = CosineAnnealingLrSchedulerConfig::new(LR_BIG.min(1.0), T_MAX).init().unwrap();
            for _ in 0..ITERS {
                lrs.push(scheduler.step().base());
            }
            // book:end
            LR_BIG
        }
        "cosine-big-fixed" => {
            // book:begin fixed
            // burn accepts initial_lr only in (0, 1]: schedule the factor from 1 and scale it.
            let mut factor = CosineAnnealingLrSchedulerConfig::new(1.0, T_MAX).init().unwrap();
            for _ in 0..ITERS {
                lrs.push(LR_BIG * factor.step().base());
            }
            // book:end
            LR_BIG
        }
        "cosine" => {
            // book:begin cosine
            let mut scheduler = CosineAnnealingLrSchedulerConfig::new(LR, T_MAX).init().unwrap();
            for _ in 0..ITERS {
                lrs.push(scheduler.step().base());
            }
            // book:end
            LR
        }
        "cosine-shifted" => {
            // book:begin shifted
            let mut scheduler = CosineAnnealingLrSchedulerConfig::new(LR, T_MAX).init().unwrap();
            scheduler.step(); // mimics the step PyTorch's constructor takes: one step too many
            for _ in 0..ITERS {
                lrs.push(scheduler.step().base());
            }
            // book:end
            LR
        }
        _ => unreachable!("Args::parse accepts only the listed variants"),
    };
    println!("lr {lrs:?}");
    let values: Vec<f32> = lrs.iter().map(|&lr| lr as f32).collect();
    let lr: Tensor<1> = tensor(&values, [ITERS], &device);
    let mut dump = dump_builder("p24", &args.variant, &input_sha256, &device)
        .metadata("initial_lr", initial_lr)
        .metadata("t_max", T_MAX).build()?;
    dump.tensor("lr", lr)?;
    dump.write(&args.out)?;
    Ok(())
}
