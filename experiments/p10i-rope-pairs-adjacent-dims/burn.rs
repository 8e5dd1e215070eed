//! p10i: a LLaMA/Qwen-style attention's q/k with burn's `RotaryEncoding`. burn rotates dimension
//! pairs (2i, 2i+1); HF transformers' `rotate_half` rotates (i, i + head_dim/2). Loaded as they
//! are, the projections give other attention scores; reordered, the same.
use burn::nn::{Linear, RotaryEncoding, RotaryEncodingConfig};
use burn::tensor::activation::softmax;
use burn::tensor::{Device, Tensor};
use pita::rope_pairs::{reorder_for_rotary, rotate_half_order};
use pita::torch_layout::{linear_from_torch, TorchLinearWeight};
use pita_lab::dump_builder;
use pita_lab::inputs::{inputs_sha256, ramp};
use pita_lab::{device, tensor, values};

// book:begin setup
const HEADS: usize = 2;
const HEAD_DIM: usize = 8;
const SEQ: usize = 4;
const D_MODEL: usize = HEADS * HEAD_DIM;
// book:end

/// `ramp(n, start)` reordered by k·7 mod n, every other sign flipped, divided by 16 (as in
/// pytorch.py): exact in f32.
fn spread(n: usize, start: usize) -> Vec<f32> {
    let ramp = ramp(n, start);
    (0..n).map(|k| ramp[(k * 7) % n] * if k % 2 == 0 { 1.0 } else { -1.0 } / 16.0).collect()
}

struct Inputs {
    x: Vec<f32>,
    weights: [Vec<f32>; 3], // q, k, v in PyTorch's [out, in]
    biases: [Vec<f32>; 3],
}

fn inputs() -> Inputs {
    let x = ramp(SEQ * D_MODEL, 0).iter().map(|v| v / 4.0).collect();
    let weights = [0, 1, 2].map(|i| spread(D_MODEL * D_MODEL, 16 * i));
    let biases = [0, 1, 2].map(|i| spread(D_MODEL, 3 + 5 * i));
    Inputs { x, weights, biases }
}

fn projection(weight: &[f32], bias: &[f32], device: &Device) -> Linear {
    linear_from_torch(TorchLinearWeight::new(tensor(weight, [D_MODEL, D_MODEL], device)), tensor(bias, [D_MODEL], device))
}

/// [1, seq, d_model] -> [1, heads, seq, head_dim].
fn heads(t: Tensor<3>) -> Tensor<4> {
    t.reshape([1, SEQ, HEADS, HEAD_DIM]).swap_dims(1, 2)
}

/// [1, heads, seq, head_dim] -> [heads·head_dim, seq]: one row per projection output.
fn feature_rows(t: Tensor<4>) -> Tensor<2> {
    t.reshape([HEADS, SEQ, HEAD_DIM]).swap_dims(1, 2).reshape([D_MODEL, SEQ])
}

/// Each unit vector e_j of one head, rotated at every position: [seq, head_dim, head_dim].
fn unit_vectors(rope: &RotaryEncoding, device: &Device) -> Tensor<3> {
    let eye = Tensor::<2>::eye(HEAD_DIM, device).unsqueeze_dim::<3>(1).expand([HEAD_DIM, SEQ, HEAD_DIM]);
    rope.forward(eye).swap_dims(0, 1)
}

struct Attention {
    q: Tensor<4>,
    k: Tensor<4>,
    scores: Tensor<4>,
    out: Tensor<3>,
}

fn attention(x: Tensor<3>, [q_proj, k_proj, v_proj]: [Linear; 3], rope: &RotaryEncoding) -> Attention {
    // book:begin attention
    let (q, k, v) = (heads(q_proj.forward(x.clone())), heads(k_proj.forward(x.clone())), heads(v_proj.forward(x)));
    let (q, k) = (rope.forward(q), rope.forward(k));
    let scores = q.clone().matmul(k.clone().swap_dims(2, 3)).div_scalar((HEAD_DIM as f32).sqrt());
    let out = softmax(scores.clone(), 3).matmul(v).swap_dims(1, 2).reshape([1, SEQ, D_MODEL]);
    // book:end
    Attention { q, k, scores, out }
}

fn main() -> Result<(), pita::Error> {
    let args = pita_lab::args::Args::parse(&["port", "fixed", "pairs", "rotated"]);
    let device = device();
    let inputs = inputs();
    let input_sha256 = inputs_sha256(&[&inputs.x, &inputs.weights[0], &inputs.weights[1], &inputs.weights[2],
        &inputs.biases[0], &inputs.biases[1], &inputs.biases[2]]);
    // book:begin port
    let rope = RotaryEncodingConfig::new(SEQ, HEAD_DIM).init(&device); // theta: default
    let [q_proj, k_proj, v_proj] = [0, 1, 2].map(|i| projection(&inputs.weights[i], &inputs.biases[i], &device));
    // book:end
    let rope_theta = RotaryEncodingConfig::new(SEQ, HEAD_DIM).theta; // as the config holds it
    let projections = match args.variant.as_str() {
        "port" | "pairs" => [q_proj, k_proj, v_proj],
        "fixed" | "rotated" => {
            // book:begin fixed
            let q_proj = reorder_for_rotary(q_proj, HEADS, HEAD_DIM);
            let k_proj = reorder_for_rotary(k_proj, HEADS, HEAD_DIM);
            // book:end
            [q_proj, k_proj, v_proj]
        }
        _ => unreachable!("Args::parse accepts only the listed variants"),
    };
    let x = tensor(&inputs.x, [1, SEQ, D_MODEL], &device);
    let attention = attention(x, projections, &rope);
    let order = rotate_half_order(HEADS, HEAD_DIM);
    let order_text = order.iter().map(|i| i.to_string()).collect::<Vec<_>>().join(",");
    let mut dump = dump_builder("p10i", &args.variant, &input_sha256, &device)
        .metadata("heads", HEADS)
        .metadata("head_dim", HEAD_DIM)
        .metadata("rope_theta", rope_theta)
        .metadata("projection_order", &order_text)
        .build()?;
    match args.variant.as_str() {
        "pairs" => {
            let unit = unit_vectors(&rope, &device);
            // book:begin pairs
            let rotated = values(unit.clone().narrow(0, 1, 1)); // position 1: row j is e_j rotated
            for (j, row) in rotated.chunks(HEAD_DIM).enumerate() {
                println!("e{j} -> {}", row.iter().map(|v| format!("{v:+.3}")).collect::<Vec<_>>().join(" "));
            }
            // book:end
            dump.tensor("unit.rotated", unit)?;
        }
        "rotated" => {
            println!("projection order {order:?}");
            println!("q.rot position 1, head 0: {:?}", rounded(attention.q.clone().slice([0..1, 0..1, 1..2]), 4));
            dump.tensor("q.rot", feature_rows(attention.q))?.tensor("k.rot", feature_rows(attention.k))?;
        }
        _ => {
            println!("scores head 0:");
            for row in values(attention.scores.clone().slice([0..1, 0..1])).chunks(SEQ) {
                println!("  {:?}", row.iter().map(|v| round(*v, 5)).collect::<Vec<_>>());
            }
            println!("out[0, 0, :4] {:?}", rounded(attention.out.clone().slice([0..1, 0..1, 0..4]), 5));
            dump.tensor("scores", attention.scores)?.tensor("out", attention.out)?;
        }
    }
    dump.write(&args.out)?;
    Ok(())
}

fn round(value: f32, digits: i32) -> f64 {
    let scale = 10f64.powi(digits);
    (value as f64 * scale).round() / scale
}

fn rounded<const D: usize>(t: Tensor<D>, digits: i32) -> Vec<f64> {
    values(t).into_iter().map(|v| round(v, digits)).collect()
}
