//! p10f: MultiHeadAttention on a batch with one fully padded sequence. burn masks scores with a
//! finite `min_float` (-1e4), so the empty sequence averages every value uniformly; PyTorch
//! returns NaN (need_weights=True) or zero attention (need_weights=False) for it.
use burn::nn::Linear;
use burn::nn::attention::{MhaInput, MultiHeadAttention, MultiHeadAttentionConfig};
use burn::tensor::{Bool, Tensor, TensorData};
use pita_lab::dump_builder;
use pita_lab::inputs::{inputs_sha256, ramp};
use pita::padding_mask::assert_no_empty_sequence;
use pita_lab::{device, linear, tensor, values};

// book:begin setup
const BATCH: usize = 2;
const SEQ: usize = 3;
const D_MODEL: usize = 2;
const KEY_PADDING_MASK: [[bool; SEQ]; BATCH] = [
    [false, false, true], // as in the PyTorch script: true = padding
    [true, true, true],   // sequence 1 is empty
];
// book:end

/// A burn Linear from PyTorch's `[out, in]` weight rows: burn stores `[in, out]`.
fn linear_from_torch(weight: &[f32], bias: &[f32], device: &burn::tensor::Device) -> Linear {
    let transposed: Vec<f32> = (0..D_MODEL * D_MODEL).map(|i| weight[(i % D_MODEL) * D_MODEL + i / D_MODEL]).collect();
    linear(&transposed, [D_MODEL, D_MODEL], bias, device)
}

fn main() -> Result<(), pita::Error> {
    let args = pita_lab::args::Args::parse(&["port", "neginf", "fixed", "guard"]);
    let device = device();
    let x_in = ramp(BATCH * SEQ * D_MODEL, 0);
    let (in_w, in_b) = (ramp(3 * D_MODEL * D_MODEL, 1), ramp(3 * D_MODEL, 3));
    let (out_w, out_b) = (ramp(D_MODEL * D_MODEL, 9), ramp(D_MODEL, 6));
    let mask_in: Vec<f32> = KEY_PADDING_MASK.iter().flatten().map(|&m| if m { 1.0 } else { 0.0 }).collect();
    let input_sha256 = inputs_sha256(&[&x_in, &in_w, &in_b, &out_w, &out_b, &mask_in]);

    let config = match args.variant.as_str() {
        // book:begin port
        "port" | "fixed" | "guard" => MultiHeadAttentionConfig::new(D_MODEL, 1).with_dropout(0.0), // min_float -1e4
        // book:end
        // book:begin neginf
        "neginf" => MultiHeadAttentionConfig::new(D_MODEL, 1).with_dropout(0.0).with_min_float(f64::NEG_INFINITY),
        // book:end
        _ => unreachable!("Args::parse accepts only the listed variants"),
    };
    println!("min_float {}", config.min_float);
    let n = D_MODEL * D_MODEL;
    let mha = MultiHeadAttention {
        query: linear_from_torch(&in_w[..n], &in_b[..D_MODEL], &device),
        key: linear_from_torch(&in_w[n..2 * n], &in_b[D_MODEL..2 * D_MODEL], &device),
        value: linear_from_torch(&in_w[2 * n..], &in_b[2 * D_MODEL..], &device),
        output: linear_from_torch(&out_w, &out_b, &device),
        ..config.init(&device)
    };
    let x = tensor(&x_in, [BATCH, SEQ, D_MODEL], &device);
    let flat: Vec<bool> = KEY_PADDING_MASK.iter().flatten().copied().collect();
    let mask_pad = Tensor::<2, Bool>::from_data(TensorData::new(flat, [BATCH, SEQ]), &device);

    if args.variant == "guard" {
        // book:begin guard
        assert_no_empty_sequence(&mask_pad);
        // book:end
    }
    // book:begin forward
    let out = mha.forward(MhaInput::self_attn(x).mask_pad(mask_pad.clone())).context;
    // book:end
    let out = if args.variant == "fixed" {
        // book:begin fixed
        // An empty sequence attends to nothing: its context is zero, so the output is the
        // output projection's bias, as in PyTorch's need_weights=False path.
        let empty = mask_pad.all_dim(1).reshape([BATCH, 1, 1]).expand([BATCH, SEQ, D_MODEL]);
        let bias = mha.output.bias.as_ref().expect("bias").val();
        out.mask_where(empty, bias.reshape([1, 1, D_MODEL]).expand([BATCH, SEQ, D_MODEL]))
        // book:end
    } else {
        out
    };
    for b in 0..BATCH {
        let row = out.clone().slice([b..b + 1, 0..SEQ, 0..D_MODEL]);
        println!("out[{b}] {:?}", values(row));
    }

    let mut dump = dump_builder("p10f", &args.variant, &input_sha256, &device).build()?;
    dump.tensor("out", out)?;
    dump.write(&args.out)?;
    Ok(())
}
