//! p10e: a boolean attention mask ported from PyTorch's scaled_dot_product_attention. PyTorch
//! reads `True` as "attend"; burn's `attention` reads `true` as "mask out".
use burn::tensor::module::attention;
use burn::tensor::ops::AttentionModuleOptions;
use burn::tensor::{Bool, Tensor, TensorData};
use pita::attend_mask::{AttendMask, sdpa};
use pita_lab::dump_builder;
use pita_lab::inputs::{inputs_sha256, ramp};
use pita_lab::{device, tensor, values};

// book:begin setup
const SEQ_Q: usize = 2;
const SEQ_K: usize = 3;
const HEAD_DIM: usize = 2;
const MASK: [[bool; SEQ_K]; SEQ_Q] = [
    [true, false, false], // as in the PyTorch script: query 0 attends to key 0 only
    [true, true, false],  // query 1: keys 0 and 1
];
// book:end

fn main() -> Result<(), pita::Error> {
    let args = pita_lab::args::Args::parse(&["port", "not", "typed"]);
    let device = device();
    let (q_in, k_in, v_in) = (ramp(SEQ_Q * HEAD_DIM, 0), ramp(SEQ_K * HEAD_DIM, 4), ramp(SEQ_K * HEAD_DIM, 10));
    let mask_in: Vec<f32> = MASK.iter().flatten().map(|&m| if m { 1.0 } else { 0.0 }).collect();
    let input_sha256 = inputs_sha256(&[&q_in, &k_in, &v_in, &mask_in]);
    let q = tensor(&q_in, [1, 1, SEQ_Q, HEAD_DIM], &device);
    let k = tensor(&k_in, [1, 1, SEQ_K, HEAD_DIM], &device);
    let v = tensor(&v_in, [1, 1, SEQ_K, HEAD_DIM], &device);
    let value = v.clone();
    let flat: Vec<bool> = MASK.iter().flatten().copied().collect();
    let mask = Tensor::<4, Bool>::from_data(TensorData::new(flat, [1, 1, SEQ_Q, SEQ_K]), &device);

    let out = match args.variant.as_str() {
        // book:begin port
        "port" => attention(q, k, v, Some(mask), None, AttentionModuleOptions::default()),
        // book:end
        // book:begin not
        "not" => attention(q, k, v, Some(mask.bool_not()), None, AttentionModuleOptions::default()),
        // book:end
        // book:begin typed
        "typed" => sdpa(q, k, v, AttendMask(mask)),
        // book:end
        _ => unreachable!("Args::parse accepts only the listed variants"),
    };
    println!("out {:?}", values(out.clone().reshape([SEQ_Q, HEAD_DIM])));

    let mut dump = dump_builder("p10e", &args.variant, &input_sha256, &device).build()?;
    dump.tensor("value", value)?.tensor("out", out)?;
    dump.write(&args.out)?;
    Ok(())
}
