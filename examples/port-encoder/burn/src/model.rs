//! The encoder of `../pytorch.py`, ported to burn. Every struct field is named as the PyTorch
//! attribute it ports, so burn's module paths (`block.attn.query.weight`) are PyTorch's
//! `named_parameters()` names, and burn-store's PyTorch adapter only has to transpose the Linear
//! weights and rename the LayerNorms' `weight`/`bias` to `gamma`/`beta`.
//!
//! Each forward taps its output under the PyTorch module path (`named_modules()`), in the order
//! PyTorch's forward hooks fire: a module's output when its call ends, a child before its parent.

use burn::module::Module;
use burn::nn::{Embedding, EmbeddingConfig, LayerNorm, LayerNormConfig, Linear, LinearConfig};
use burn::tensor::activation::{gelu, softmax};
use burn::tensor::{Device, Int, Tensor};

use pita::record::tap;

/// The sizes of `pytorch.py`.
pub const VOCAB: usize = 16;
pub const D_MODEL: usize = 8;
pub const N_HEADS: usize = 2;
pub const CLASSES: usize = 8;

/// Self-attention with four Linears (PyTorch: the hand-written `Attention`; burn's own
/// `MultiHeadAttention` has the same four fields but its inner activations cannot be tapped).
/// The key projection has no bias, as on the PyTorch side.
#[derive(Module, Debug)]
pub struct Attention {
    pub query: Linear,
    pub key: Linear,
    pub value: Linear,
    pub output: Linear,
    pub n_heads: usize,
}

impl Attention {
    fn new(d_model: usize, n_heads: usize, device: &Device) -> Self {
        let linear = |bias: bool| LinearConfig::new(d_model, d_model).with_bias(bias).init(device);
        Attention { query: linear(true), key: linear(false), value: linear(true), output: linear(true), n_heads }
    }

    fn forward(&self, x: Tensor<3>, path: &str) -> Tensor<3> {
        let [b, t, d] = x.dims();
        let d_k = d / self.n_heads;
        let heads = |y: Tensor<3>| y.reshape([b, t, self.n_heads, d_k]).swap_dims(1, 2); // [b, h, t, d_k]
        let q = self.query.forward(x.clone());
        tap(&format!("{path}.query"), &q);
        let k = self.key.forward(x.clone());
        tap(&format!("{path}.key"), &k);
        let v = self.value.forward(x);
        tap(&format!("{path}.value"), &v);
        let scores = heads(q).matmul(heads(k).swap_dims(2, 3)) / (d_k as f64).sqrt();
        let context = softmax(scores, 3).matmul(heads(v)).swap_dims(1, 2).reshape([b, t, d]);
        let y = self.output.forward(context);
        tap(&format!("{path}.output"), &y);
        y
    }
}

/// Linear, GELU (the exact erf form, as `nn.GELU()`), Linear; square, d -> d -> d.
#[derive(Module, Debug)]
pub struct Mlp {
    pub fc1: Linear,
    pub fc2: Linear,
}

impl Mlp {
    // book:begin tap
    fn forward(&self, x: Tensor<3>, path: &str) -> Tensor<3> {
        let h = self.fc1.forward(x);
        tap(&format!("{path}.fc1"), &h);
        let h = gelu(h);
        tap(&format!("{path}.gelu"), &h); // PyTorch's nn.GELU is a module, so it has an activation
        let y = self.fc2.forward(h);
        tap(&format!("{path}.fc2"), &y);
        y
    }
    // book:end
}

/// Pre-norm: x + attn(ln1(x)), then x + mlp(ln2(x)).
#[derive(Module, Debug)]
pub struct Block {
    pub ln1: LayerNorm,
    pub attn: Attention,
    pub ln2: LayerNorm,
    pub mlp: Mlp,
}

impl Block {
    fn forward(&self, x: Tensor<3>, path: &str) -> Tensor<3> {
        let h = self.ln1.forward(x.clone());
        tap(&format!("{path}.ln1"), &h);
        let a = self.attn.forward(h, &format!("{path}.attn"));
        tap(&format!("{path}.attn"), &a);
        let x = x + a;
        let h = self.ln2.forward(x.clone());
        tap(&format!("{path}.ln2"), &h);
        let m = self.mlp.forward(h, &format!("{path}.mlp"));
        tap(&format!("{path}.mlp"), &m);
        let y = x + m;
        tap(path, &y);
        y
    }
}

/// Embedding, one block, mean-pool over the sequence, a classification head.
#[derive(Module, Debug)]
pub struct Encoder {
    pub embed: Embedding,
    pub block: Block,
    pub head: Linear,
}

impl Encoder {
    /// A model of the right shapes; its values are replaced by the PyTorch weights when loaded.
    pub fn new(device: &Device) -> Self {
        let layer_norm = || LayerNormConfig::new(D_MODEL).init(device); // eps 1e-5, as nn.LayerNorm
        Encoder {
            embed: EmbeddingConfig::new(VOCAB, D_MODEL).init(device),
            block: Block {
                ln1: layer_norm(),
                attn: Attention::new(D_MODEL, N_HEADS, device),
                ln2: layer_norm(),
                mlp: Mlp {
                    fc1: LinearConfig::new(D_MODEL, D_MODEL).init(device),
                    fc2: LinearConfig::new(D_MODEL, D_MODEL).init(device),
                },
            },
            head: LinearConfig::new(D_MODEL, CLASSES).init(device),
        }
    }

    /// tokens `[batch, seq]` -> logits `[batch, classes]`.
    pub fn forward(&self, tokens: Tensor<2, Int>) -> Tensor<2> {
        let x = self.embed.forward(tokens);
        tap("embed", &x);
        let x = self.block.forward(x, "block");
        let pooled = x.mean_dim(1).squeeze_dim::<2>(1);
        let logits = self.head.forward(pooled);
        tap("head", &logits);
        logits
    }
}
