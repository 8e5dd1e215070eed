//! p10g: burn's Embedding has no `padding_idx`. The padding row is looked up like any other row,
//! so it receives gradient and moves on the first step; a fresh layer initialises it randomly.
use burn::module::Param;
use burn::nn::{Embedding, EmbeddingConfig};
use burn::tensor::module::embedding;
use burn::tensor::{Int, Tensor};
use pita_lab::dump_builder;
use pita_lab::inputs::{inputs_sha256, ramp};
use pita::padding_idx::embedding_with_padding_idx;
use pita_lab::{device, tensor, values};

// book:begin setup
const VOCAB: usize = 3;
const D_MODEL: usize = 2;
const PAD: i64 = 0;
const IDS: [[i64; 4]; 1] = [[0, 1, 0, 2]]; // id 0 is padding
const LR: f32 = 0.5;
// book:end

fn main() -> Result<(), pita::Error> {
    let args = pita_lab::args::Args::parse(&["port", "fixed", "init"]);
    let device = device();
    let weight: Vec<f32> = [0.0, 0.0].into_iter().chain(ramp(4, 1)).collect(); // row 0 zero, as in PyTorch
    let ids_in: Vec<f32> = IDS.iter().flatten().map(|&i| i as f32).collect();
    let input_sha256 = inputs_sha256(&[&weight, &ids_in, &[LR]]);
    let mut dump = dump_builder("p10g", &args.variant, &input_sha256, &device)
        .metadata("padding_idx", PAD)
        .metadata("padding_tokens", IDS.iter().flatten().filter(|&&i| i == PAD).count()).build()?;

    if args.variant == "init" {
        device.seed(0);
        // book:begin init
        let fresh = EmbeddingConfig::new(VOCAB, D_MODEL).init(&device); // no padding_idx to pass
        // book:end
        println!("fresh weight {:?}", values(fresh.weight.val()));
        let pad_row = fresh.weight.val().slice([PAD as usize..PAD as usize + 1, 0..D_MODEL]).reshape([D_MODEL]);
        dump.tensor("weight.pad_row", pad_row)?;
        dump.write(&args.out)?;
        return Ok(());
    }

    // book:begin port
    let emb = Embedding { weight: Param::from_tensor(tensor(&weight, [VOCAB, D_MODEL], &device)) };
    let ids = Tensor::<2, Int>::from_ints(IDS, &device);
    // book:end
    let out = match args.variant.as_str() {
        // book:begin forward
        "port" => emb.forward(ids.clone()),
        // book:end
        // book:begin fixed
        "fixed" => embedding_with_padding_idx(&emb, ids.clone(), PAD),
        // book:end
        _ => unreachable!("Args::parse accepts only the listed variants"),
    };
    // book:begin step
    let grads = out.clone().sum().backward();
    let weight_grad = emb.weight.val().grad(&grads).expect("weight.grad");
    let step1 = emb.weight.val().inner() - weight_grad.clone().mul_scalar(LR); // one SGD step
    let out_step1 = embedding(step1.clone(), ids.inner());
    // book:end
    println!("out {:?}", values(out.clone()));
    println!("weight.grad {:?}", values(weight_grad.clone()));
    println!("weight.step1 {:?}", values(step1.clone()));
    println!("out.step1 {:?}", values(out_step1.clone()));

    dump.tensor("out", out)?.tensor("weight.grad", weight_grad)?.tensor("weight.step1", step1)?.tensor("out.step1", out_step1)?;
    dump.write(&args.out)?;
    Ok(())
}
