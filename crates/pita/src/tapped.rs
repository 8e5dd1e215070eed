//! Tapped forwards of burn's own composite modules: each calls the module's submodules in burn's
//! order, with burn's arithmetic (bit for bit its `forward`), and [`tap`]s their outputs under the
//! names PyTorch's forward hooks record for the matching `torch.nn` module, so that `pita trace`
//! sees inside them. Their dropouts go through [`replay::dropout`] under PyTorch's module paths,
//! so a replayed reference's masks apply there too.
//!
//! What each records, in order, for `path` = `p`:
//!
//! - [`multi_head_attention`] (burn's [`MultiHeadAttention`], PyTorch's `nn.MultiheadAttention`):
//!   `p`, the context. PyTorch computes the projections functionally, so `p.out_proj` is not
//!   recorded.
//! - [`transformer_encoder_layer`] (burn's [`TransformerEncoderLayer`], PyTorch's
//!   `nn.TransformerEncoderLayer(batch_first=True)`): `p.self_attn`, `p.dropout1`, `p.norm1`,
//!   `p.linear1`, `p.dropout`, `p.linear2`, `p.dropout2`, `p.norm2`, `p`; with `norm_first`:
//!   `p.norm1`, `p.self_attn`, `p.dropout1`, `p.norm2`, `p.linear1`, `p.dropout`, `p.linear2`,
//!   `p.dropout2`, `p`.
//! - [`transformer_encoder`] (burn's [`TransformerEncoder`], PyTorch's `nn.TransformerEncoder`):
//!   each layer's, under `p.layers.<i>`, then `p`.
//!
//! The masks replayed: `p` (the attention weights' dropout, functional inside
//! `nn.MultiheadAttention`), `p.dropout1`, `p.dropout` and `p.dropout2` of a layer. PyTorch's
//! `nn.TransformerEncoderLayer` draws its attention dropout inside
//! `scaled_dot_product_attention`, where `pita.torch` cannot record it: to replay such a
//! reference, turn the attention dropout off on both sides (`layer.mha.dropout =
//! DropoutConfig::new(0.0).init()` here, `layer.self_attn.dropout = 0.0` in PyTorch).
//!
//! burn names the two norms by their order in the post-norm layer: its `norm_1` is PyTorch's
//! `norm1` (after attention) and `norm_2` PyTorch's `norm2`. With `norm_first`, burn applies
//! `norm_2` before attention and `norm_1` before the feed-forward, so its `norm_2` plays
//! PyTorch's `norm1` and its `norm_1` PyTorch's `norm2`: the taps follow the role (load the
//! weights the same way). burn's layer uses one `dropout` for PyTorch's `dropout1` and
//! `dropout2`, and its feed-forward's for PyTorch's `dropout`. The activation (burn: GELU by
//! default; PyTorch: ReLU by default) is a function in PyTorch, not recorded; a PyTorch layer
//! given an activation module (`activation=nn.GELU()`) records it as `p.activation`, which these
//! forwards do not tap. burn's encoder has no final norm: for a PyTorch encoder built with
//! `norm=`, call [`transformer_encoder_layer`] for each layer, then the norm, tapping `p.norm`
//! and then `p` yourself.
//!
//! An empty `path` stands for the root module, which PyTorch does not record: its children are
//! named without a prefix (`layers.0`), and it is not tapped itself.
//!
//! burn's `Gru` and `Lstm` need no tapped forward: PyTorch's `nn.GRU`/`nn.LSTM` are single
//! modules, nothing inside them is hooked, so `tap("gru", &output)` after burn's forward records
//! all PyTorch does.
//!
//! ```rust
//! use burn::nn::transformer::TransformerEncoderConfig;
//! use burn::tensor::{Bool, Device, Tensor, TensorData};
//! use pita::record::Recorder;
//! use pita::tapped::{self, EncoderInput};
//!
//! let device = Device::flex().autodiff();
//! let encoder = TransformerEncoderConfig::new(8, 16, 2, 1).with_dropout(0.0).init(&device);
//! let x = Tensor::<3>::ones([2, 3, 8], &device);
//! let padding = Tensor::<2, Bool>::from_data(TensorData::from([[false, false, true], [false, false, false]]), &device);
//!
//! let mut recorder = Recorder::new();
//! {
//!     let _listening = recorder.listen();
//!     // in place of encoder.forward(TransformerEncoderInput::new(x).mask_pad(padding)):
//!     tapped::transformer_encoder("encoder", &encoder, EncoderInput::new(x).mask_pad(padding));
//! }
//! assert_eq!(recorder.execution_order()[..3], ["act/encoder.layers.0.self_attn", "act/encoder.layers.0.dropout1", "act/encoder.layers.0.norm1"]);
//! assert_eq!(recorder.execution_order().last().unwrap(), "act/encoder");
//! ```
//!
//! Cost: burn's forward, plus two thread-local reads per submodule call when no recorder listens
//! and no replay is active; otherwise a short name (`format!`) per submodule call as well.

use std::fmt;

use burn::nn::attention::{MhaInput, MhaOutput, MultiHeadAttention};
use burn::nn::transformer::{PositionWiseFeedForward, TransformerEncoder, TransformerEncoderInput, TransformerEncoderLayer};
use burn::nn::Linear;
use burn::tensor::activation::{quiet_softmax, softmax};
use burn::tensor::{assert_shape, Bool, Tensor};

use crate::record::{listening, tap};
use crate::replay;

/// What burn's [`MhaInput`] holds, readable (burn keeps its fields private): the input of
/// [`multi_head_attention`], built as burn's is.
#[derive(Debug, Clone)]
pub struct AttentionInput {
    /// `[batch_size, seq_length_1, d_model]`
    pub query: Tensor<3>,
    /// `[batch_size, seq_length_2, d_model]`
    pub key: Tensor<3>,
    /// `[batch_size, seq_length_2, d_model]`
    pub value: Tensor<3>,
    /// `[batch_size, seq_length_2]`, true at padding (a key no query attends to).
    pub mask_pad: Option<Tensor<2, Bool>>,
    /// `[batch_size, seq_length_1, seq_length_2]`, true where a query may not attend.
    pub mask_attn: Option<Tensor<3, Bool>>,
}

impl AttentionInput {
    /// Self-attention: query, key and value are `tensor` (burn's `MhaInput::self_attn`).
    pub fn self_attn(tensor: Tensor<3>) -> Self {
        Self::new(tensor.clone(), tensor.clone(), tensor)
    }

    /// burn's `MhaInput::new`.
    pub fn new(query: Tensor<3>, key: Tensor<3>, value: Tensor<3>) -> Self {
        AttentionInput { query, key, value, mask_pad: None, mask_attn: None }
    }

    /// Sets the padding mask.
    pub fn mask_pad(mut self, mask_pad: Tensor<2, Bool>) -> Self {
        self.mask_pad = Some(mask_pad);
        self
    }

    /// Sets the attention mask.
    pub fn mask_attn(mut self, mask_attn: Tensor<3, Bool>) -> Self {
        self.mask_attn = Some(mask_attn);
        self
    }

    /// The same input as burn's [`MhaInput`], for `MultiHeadAttention::forward`.
    pub fn into_burn(self) -> MhaInput {
        let mut input = MhaInput::new(self.query, self.key, self.value);
        if let Some(mask_pad) = self.mask_pad {
            input = input.mask_pad(mask_pad);
        }
        if let Some(mask_attn) = self.mask_attn {
            input = input.mask_attn(mask_attn);
        }
        input
    }
}

/// What burn's [`TransformerEncoderInput`] holds, readable (burn keeps its fields private): the
/// input of [`transformer_encoder`], built as burn's is.
#[derive(Debug, Clone)]
pub struct EncoderInput {
    /// `[batch_size, seq_length, d_model]`
    pub tensor: Tensor<3>,
    /// `[batch_size, seq_length]`, true at padding.
    pub mask_pad: Option<Tensor<2, Bool>>,
    /// `[batch_size, seq_length, seq_length]`, true where a position may not attend.
    pub mask_attn: Option<Tensor<3, Bool>>,
}

impl EncoderInput {
    /// burn's `TransformerEncoderInput::new`.
    pub fn new(tensor: Tensor<3>) -> Self {
        EncoderInput { tensor, mask_pad: None, mask_attn: None }
    }

    /// Sets the padding mask.
    pub fn mask_pad(mut self, mask_pad: Tensor<2, Bool>) -> Self {
        self.mask_pad = Some(mask_pad);
        self
    }

    /// Sets the attention mask.
    pub fn mask_attn(mut self, mask_attn: Tensor<3, Bool>) -> Self {
        self.mask_attn = Some(mask_attn);
        self
    }

    /// The same input as burn's [`TransformerEncoderInput`], for `TransformerEncoder::forward`.
    pub fn into_burn(self) -> TransformerEncoderInput {
        let mut input = TransformerEncoderInput::new(self.tensor);
        if let Some(mask_pad) = self.mask_pad {
            input = input.mask_pad(mask_pad);
        }
        if let Some(mask_attn) = self.mask_attn {
            input = input.mask_attn(mask_attn);
        }
        input
    }
}

/// `encoder.forward(input)` (burn's [`TransformerEncoder`]), tapping each layer as
/// [`transformer_encoder_layer`] does, under `<path>.layers.<i>`, then the output as `path`.
/// The autoregressive cache is not covered.
pub fn transformer_encoder(path: &str, encoder: &TransformerEncoder, input: EncoderInput) -> Tensor<3> {
    let EncoderInput { tensor: mut x, mask_pad, mask_attn } = input;
    for (i, layer) in encoder.layers.iter().enumerate() {
        x = transformer_encoder_layer(&child(path, format_args!("layers.{i}")), layer, x, mask_pad.clone(), mask_attn.clone());
    }
    tap_module(path, &x);
    x
}

/// `layer.forward(input, mask_pad, mask_attn)` (burn's [`TransformerEncoderLayer`]), tapping as
/// PyTorch's `nn.TransformerEncoderLayer` records (the [module documentation](self) lists the
/// names), its dropouts replayed under `<path>.dropout1`, `<path>.dropout`, `<path>.dropout2`
/// and its attention's under `<path>.self_attn`.
///
/// # Panics
///
/// As burn's forward does (shapes), and as [`replay::dropout`] does.
pub fn transformer_encoder_layer(
    path: &str,
    layer: &TransformerEncoderLayer,
    input: Tensor<3>,
    mask_pad: Option<Tensor<2, Bool>>,
    mask_attn: Option<Tensor<3, Bool>>,
) -> Tensor<3> {
    let name = |submodule: &str| child(path, format_args!("{submodule}"));
    // Attention block. With norm_first, burn's norm_2 is the norm before attention: PyTorch's norm1.
    let x = input;
    let mut residual = x.clone();
    if layer.norm_first {
        residual = layer.norm_2.forward(residual);
        tap(&name("norm1"), &residual);
    }
    let attention = AttentionInput { mask_pad, mask_attn, ..AttentionInput::self_attn(residual) };
    let residual = multi_head_attention(&name("self_attn"), &layer.mha, attention).context;
    let residual = tapped_dropout(&name("dropout1"), &layer.dropout, residual);
    let mut x = x + residual;

    // Feed-forward block. With norm_first, burn's norm_1 is the norm before it: PyTorch's norm2.
    let residual = if layer.norm_first {
        let normed = layer.norm_1.forward(x.clone());
        tap(&name("norm2"), &normed);
        normed
    } else {
        x = layer.norm_1.forward(x);
        tap(&name("norm1"), &x);
        x.clone()
    };
    let residual = feed_forward(path, &layer.pwff, residual);
    let residual = tapped_dropout(&name("dropout2"), &layer.dropout, residual);
    let mut x = x + residual;
    if !layer.norm_first {
        x = layer.norm_2.forward(x);
        tap(&name("norm2"), &x);
    }
    tap_module(path, &x);
    x
}

/// `mha.forward(input.into_burn())` (burn's [`MultiHeadAttention`]), tapping the context as
/// `path` (the first tensor of the tuple PyTorch's `nn.MultiheadAttention` returns), the
/// attention weights' dropout replayed under `path`.
///
/// # Panics
///
/// As burn's forward does (shapes), and as [`replay::dropout`] does.
pub fn multi_head_attention(path: &str, mha: &MultiHeadAttention, input: AttentionInput) -> MhaOutput {
    let AttentionInput { query, key, value, mask_pad, mask_attn } = input;
    let [batch_size, seq_length_1, d_model] = query.dims();
    let [_, seq_length_2, _] = key.dims();
    assert_shape!(query, [_, _, mha.d_model]);
    assert_shape!(key, [batch_size, _, mha.d_model]);
    assert_shape!(value, [batch_size, seq_length_2, mha.d_model]);

    let query = heads(mha, query, &mha.query);
    let key = heads(mha, key, &mha.key);
    let value = heads(mha, value, &mha.value);

    let mut scores = query.matmul(key.transpose()).div_scalar((mha.d_k as f32).sqrt());
    if let Some(mask_pad) = mask_pad {
        let [batch_size, seq_length] = mask_pad.dims();
        scores = scores.mask_fill(mask_pad.reshape([batch_size, 1, 1, seq_length]), mha.min_float);
    }
    if let Some(mask_attn) = mask_attn {
        let [batch_size, seq_length_1, seq_length_2] = mask_attn.dims();
        scores = scores.mask_fill(mask_attn.reshape([batch_size, 1, seq_length_1, seq_length_2]), mha.min_float);
    }
    let weights = if mha.quiet_softmax { quiet_softmax(scores, 3) } else { softmax(scores, 3) };
    let weights = replay::dropout(path, &mha.dropout, weights);

    let context = weights.clone().matmul(value).swap_dims(1, 2).reshape([batch_size, seq_length_1, d_model]);
    let context = mha.output.forward(context);
    tap_module(path, &context);
    MhaOutput { weights, context }
}

/// burn's `PositionWiseFeedForward::forward`, tapped as PyTorch's layer records its feed-forward:
/// `linear1`, `dropout`, `linear2`.
fn feed_forward(path: &str, pwff: &PositionWiseFeedForward, input: Tensor<3>) -> Tensor<3> {
    let [d_model, _] = pwff.linear_inner.weight.shape().dims();
    assert_shape!(input, [.., d_model]);
    let x = pwff.linear_inner.forward(input);
    tap(&child(path, format_args!("linear1")), &x);
    let x = pwff.activation.forward(x);
    let x = tapped_dropout(&child(path, format_args!("dropout")), &pwff.dropout, x);
    let x = pwff.linear_outer.forward(x);
    tap(&child(path, format_args!("linear2")), &x);
    x
}

/// burn's `MultiHeadAttention::attention_linear`: the projection, split into heads.
fn heads(mha: &MultiHeadAttention, x: Tensor<3>, linear: &Linear) -> Tensor<4> {
    let [batch_size, seq_length, _] = x.dims();
    linear.forward(x).reshape([batch_size, seq_length, mha.n_heads, mha.d_k]).swap_dims(1, 2)
}

/// An `nn.Dropout` module of PyTorch's: its mask replayed and its output tapped, both as `name`.
fn tapped_dropout(name: &str, dropout: &burn::nn::Dropout, x: Tensor<3>) -> Tensor<3> {
    let x = replay::dropout(name, dropout, x);
    tap(name, &x);
    x
}

/// A module's output, unless it is the root's (PyTorch does not record the root).
fn tap_module<const D: usize>(path: &str, x: &Tensor<D>) {
    if !path.is_empty() {
        tap(path, x);
    }
}

/// `<path>.<name>`, or `name` under the root; built only when a recorder listens or a replay is
/// active, as nothing else reads it (an empty `String` allocates nothing).
fn child(path: &str, name: fmt::Arguments<'_>) -> String {
    if !(listening() || replay::active()) {
        return String::new();
    }
    match path {
        "" => name.to_string(),
        _ => format!("{path}.{name}"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::record::Recorder;
    use crate::replay::{replayed_masks, Replay};
    use burn::nn::attention::MultiHeadAttentionConfig;
    use burn::nn::transformer::TransformerEncoderConfig;
    use burn::module::Param;
    use burn::nn::DropoutConfig;
    use burn::tensor::{Device, Distribution, TensorData};

    const BATCH: usize = 2;
    const SEQ: usize = 5;
    const D_MODEL: usize = 8;
    const HEADS: usize = 2;

    fn device() -> Device {
        Device::flex().autodiff()
    }

    fn bits<const D: usize>(tensor: Tensor<D>) -> Vec<u32> {
        tensor.into_data().try_to_vec::<f32>().unwrap().into_iter().map(f32::to_bits).collect()
    }

    fn input(device: &Device) -> Tensor<3> {
        Tensor::<3>::random([BATCH, SEQ, D_MODEL], Distribution::Normal(0.0, 1.0), device)
    }

    /// The second sequence ends in two padding positions.
    fn padding(device: &Device) -> Tensor<2, Bool> {
        let rows: Vec<bool> = (0..BATCH * SEQ).map(|i| i >= 2 * SEQ - 2).collect();
        Tensor::from_data(TensorData::new(rows, [BATCH, SEQ]), device)
    }

    /// Causal: position i attends to positions up to i.
    fn causal(device: &Device) -> Tensor<3, Bool> {
        let mask: Vec<bool> = (0..BATCH * SEQ * SEQ).map(|i| (i % SEQ) > (i / SEQ) % SEQ).collect();
        Tensor::from_data(TensorData::new(mask, [BATCH, SEQ, SEQ]), device)
    }

    /// An encoder whose norms differ from one another (as initialised they are all the same,
    /// and a norm applied in another's place would go unseen).
    fn encoder(norm_first: bool, dropout: f64, layers: usize) -> TransformerEncoder {
        let mut encoder = TransformerEncoderConfig::new(D_MODEL, 16, HEADS, layers).with_norm_first(norm_first).with_dropout(dropout).init(&device());
        let random = || Param::from_tensor(Tensor::<1>::random([D_MODEL], Distribution::Uniform(0.5, 1.5), &device()));
        for layer in &mut encoder.layers {
            for norm in [&mut layer.norm_1, &mut layer.norm_2] {
                norm.gamma = random();
                norm.beta = Some(random());
            }
        }
        encoder
    }

    #[test]
    fn attention_is_burns_forward() {
        let device = device();
        for quiet_softmax in [false, true] {
            let mha = MultiHeadAttentionConfig::new(D_MODEL, HEADS).with_dropout(0.0).with_quiet_softmax(quiet_softmax).init(&device);
            let (x, memory) = (input(&device), input(&device));
            let inputs = [
                AttentionInput::self_attn(x.clone()),
                AttentionInput::new(x.clone(), memory.clone(), memory.clone()).mask_pad(padding(&device)),
                AttentionInput::self_attn(x.clone()).mask_pad(padding(&device)).mask_attn(causal(&device)),
            ];
            for (case, input) in inputs.into_iter().enumerate() {
                let burns = mha.forward(input.clone().into_burn());
                let ours = multi_head_attention("attn", &mha, input);
                assert_eq!(bits(ours.context), bits(burns.context), "quiet {quiet_softmax}, case {case}");
                assert_eq!(bits(ours.weights), bits(burns.weights), "quiet {quiet_softmax}, case {case}");
            }
            // The negative control: the masks reach the scores.
            let unmasked = multi_head_attention("attn", &mha, AttentionInput::self_attn(x.clone()));
            let masked = mha.forward(MhaInput::self_attn(x).mask_pad(padding(&device)));
            assert_ne!(bits(unmasked.context), bits(masked.context));
        }
    }

    #[test]
    fn layer_is_burns_forward() {
        let device = device();
        for norm_first in [false, true] {
            let layer = encoder(norm_first, 0.0, 1).layers.remove(0);
            let x = input(&device).require_grad();
            let ours = transformer_encoder_layer("layer", &layer, x.clone(), Some(padding(&device)), None);
            let burns = layer.forward(x.clone(), Some(padding(&device)), None);
            assert_eq!(bits(ours.clone()), bits(burns.clone()), "norm_first {norm_first}");
            let (ours_grads, burns_grads) = (ours.sum().backward(), burns.sum().backward());
            assert_eq!(bits(x.grad(&ours_grads).unwrap()), bits(x.grad(&burns_grads).unwrap()), "norm_first {norm_first}: d/dx");
            // The negative controls: the other branch of norm_first, and no padding mask.
            let other = TransformerEncoderLayer { norm_first: !norm_first, ..layer.clone() };
            let branch = transformer_encoder_layer("layer", &other, x.clone(), Some(padding(&device)), None);
            assert_ne!(bits(branch), bits(layer.forward(x.clone(), Some(padding(&device)), None)), "norm_first {norm_first}");
            let unmasked = transformer_encoder_layer("layer", &layer, x.clone(), None, None);
            assert_ne!(bits(unmasked), bits(layer.forward(x, Some(padding(&device)), None)), "norm_first {norm_first}");
        }
    }

    #[test]
    fn encoder_is_burns_forward() {
        let device = device();
        for norm_first in [false, true] {
            let encoder = encoder(norm_first, 0.0, 2);
            let input = EncoderInput::new(input(&device)).mask_pad(padding(&device)).mask_attn(causal(&device));
            let ours = transformer_encoder("encoder", &encoder, input.clone());
            assert_eq!(bits(ours.clone()), bits(encoder.forward(input.clone().into_burn())), "norm_first {norm_first}");
            let without_attn_mask = EncoderInput { mask_attn: None, ..input };
            assert_ne!(bits(ours), bits(encoder.forward(without_attn_mask.into_burn())), "the negative control");
        }
        // A dropout burn does not apply (a device without autodiff) leaves the forward deterministic.
        let encoder = TransformerEncoderConfig::new(D_MODEL, 16, HEADS, 2).with_dropout(0.3).init(&Device::flex());
        let x = input(&Device::flex());
        assert_eq!(bits(transformer_encoder("", &encoder, EncoderInput::new(x.clone()))), bits(encoder.forward(TransformerEncoderInput::new(x))));
    }

    /// The names and order torch 2.15.0's forward hooks record for `nn.TransformerEncoder(
    /// nn.TransformerEncoderLayer(8, 2, 16, batch_first=True, norm_first=…), 2)` registered as
    /// `encoder` of an `nn.Sequential`, in training mode with a padding mask: printed by a hook
    /// on every `named_modules()` entry but the root, appending the module's name.
    #[test]
    fn taps_in_pytorchs_order() {
        const POST_NORM: [&str; 9] = ["self_attn", "dropout1", "norm1", "linear1", "dropout", "linear2", "dropout2", "norm2", ""];
        const PRE_NORM: [&str; 9] = ["norm1", "self_attn", "dropout1", "norm2", "linear1", "dropout", "linear2", "dropout2", ""];
        let device = device();
        for (norm_first, layer_order) in [(false, POST_NORM), (true, PRE_NORM)] {
            let encoder = encoder(norm_first, 0.0, 2);
            let mut recorder = Recorder::new();
            {
                let _listening = recorder.listen();
                transformer_encoder("encoder", &encoder, EncoderInput::new(input(&device)).mask_pad(padding(&device)));
            }
            let mut torch: Vec<String> = (0..2)
                .flat_map(|i| layer_order.map(|name| format!("act/encoder.layers.{i}{}", if name.is_empty() { String::new() } else { format!(".{name}") })))
                .collect();
            torch.push("act/encoder".to_string());
            assert_eq!(recorder.execution_order(), torch, "norm_first {norm_first}");
        }
        // Under the root, nothing is prefixed and the root is not tapped.
        let mut recorder = Recorder::new();
        {
            let _listening = recorder.listen();
            transformer_encoder("", &encoder(false, 0.0, 1), EncoderInput::new(input(&device)));
        }
        assert_eq!(recorder.execution_order().first().map(String::as_str), Some("act/layers.0.self_attn"));
        assert_eq!(recorder.execution_order().last().map(String::as_str), Some("act/layers.0"));
    }

    /// A keep-mask of `shape` with about 30 % dropped, from a fixed sequence.
    fn pattern(shape: &[usize], seed: u64) -> Vec<bool> {
        let mut state = seed;
        let n: usize = shape.iter().product();
        (0..n)
            .map(|_| {
                state = state.wrapping_mul(6_364_136_223_846_793_005).wrapping_add(1_442_695_040_888_963_407);
                (state >> 33) % 10 >= 3
            })
            .collect()
    }

    /// `x * (mask / (1 - p))`, written out here.
    fn masked<const D: usize>(x: Tensor<D>, keep: &[bool], p: f64) -> Tensor<D> {
        let values: Vec<f32> = keep.iter().map(|&k| f32::from(u8::from(k))).collect();
        let mask = Tensor::<D>::from_data(TensorData::new(values, x.dims()), &x.device());
        x * mask.div_scalar(1.0 - p)
    }

    /// With p > 0 under a replay, the layer is PyTorch's formula (`_sa_block`, `_ff_block`) with
    /// the reference's masks in their places, built here from burn's submodules. Also without
    /// attention dropout, the way docs/recording.md replays a reference whose attention ran
    /// through `scaled_dot_product_attention` (its mask unrecorded).
    #[test]
    fn replays_the_masks_under_pytorchs_names() {
        let p = 0.3;
        let device = device();
        for (norm_first, attention_dropout) in [(false, true), (true, true), (false, false)] {
            let case = format!("norm_first {norm_first}, attention dropout {attention_dropout}");
            let mut layer = encoder(norm_first, p, 1).layers.remove(0);
            if !attention_dropout {
                layer.mha.dropout = DropoutConfig::new(0.0).init();
            }
            let x = input(&device);
            let weights_shape = [BATCH, HEADS, SEQ, SEQ];
            let hidden = [BATCH, SEQ, D_MODEL];
            let masks = [
                ("self_attn", pattern(&weights_shape, 1), weights_shape.to_vec()),
                ("dropout1", pattern(&hidden, 2), hidden.to_vec()),
                ("dropout", pattern(&[BATCH, SEQ, 16], 3), vec![BATCH, SEQ, 16]),
                ("dropout2", pattern(&hidden, 4), hidden.to_vec()),
            ];
            let replayed = masks.iter().filter(|(name, ..)| attention_dropout || *name != "self_attn");
            let named = replayed.map(|(name, keep, shape)| (format!("mask1/encoder.layers.0.{name}"), TensorData::new(keep.clone(), shape.clone())));
            let replay = Replay::from_masks(named).unwrap();
            let before = replayed_masks();
            let ours = {
                let _replaying = replay.step(1);
                transformer_encoder_layer("encoder.layers.0", &layer, x.clone(), Some(padding(&device)), None)
            };
            assert_eq!(replayed_masks() - before, 3 + usize::from(attention_dropout), "{case}");

            // PyTorch's names for burn's norms: by role (see the module documentation).
            let (norm1, norm2) = if norm_first { (&layer.norm_2, &layer.norm_1) } else { (&layer.norm_1, &layer.norm_2) };
            let self_attention = |x: Tensor<3>| {
                let no_dropout = MultiHeadAttention { dropout: DropoutConfig::new(0.0).init(), ..layer.mha.clone() };
                let weights = no_dropout.forward(MhaInput::self_attn(x.clone()).mask_pad(padding(&device))).weights;
                let value = layer.mha.value.forward(x).reshape([BATCH, SEQ, HEADS, D_MODEL / HEADS]).swap_dims(1, 2);
                let weights = if attention_dropout { masked(weights, &masks[0].1, p) } else { weights };
                let context = weights.matmul(value).swap_dims(1, 2).reshape(hidden);
                layer.mha.output.forward(context)
            };
            let feed_forward = |x: Tensor<3>| {
                let x = layer.pwff.activation.forward(layer.pwff.linear_inner.forward(x));
                layer.pwff.linear_outer.forward(masked(x, &masks[2].1, p))
            };
            let expected = if norm_first {
                let x = x.clone() + masked(self_attention(norm1.forward(x.clone())), &masks[1].1, p);
                x.clone() + masked(feed_forward(norm2.forward(x)), &masks[3].1, p)
            } else {
                let x = norm1.forward(x.clone() + masked(self_attention(x.clone()), &masks[1].1, p));
                norm2.forward(x.clone() + masked(feed_forward(x), &masks[3].1, p))
            };
            assert_eq!(bits(ours.clone()), bits(expected), "{case}");
            // The negative control: the same layer's own random masks.
            assert_ne!(bits(ours), bits(layer.forward(x, Some(padding(&device)), None)), "{case}");
        }
    }
}
