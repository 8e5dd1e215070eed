//! transformers' `GPT2LMHeadModel` (`../pytorch.py`), ported to burn with burn's own modules.
//! Every struct field is named as the PyTorch attribute it ports, so burn's module paths
//! (`transformer.h.0.attn.c_attn.weight`) are PyTorch's `named_parameters()` names.
//!
//! - GPT-2's `Conv1D` (`c_attn`, `c_proj`, `c_fc`) computes `x W + b` with `W` stored `[in, out]`:
//!   that is burn's `Linear` as it is, the transpose of `nn.Linear`'s layout.
//! - The LM head has no parameter of its own: PyTorch ties `lm_head.weight` to
//!   `transformer.wte.weight`, so the logits are `x wteᵀ` with the embedding's `Param`, and
//!   autodiff sums the gradients of both uses into it, as PyTorch does.
//!
//! Each forward taps its output under the PyTorch module path, in the order PyTorch's forward
//! hooks fire (a child before its parent), and every dropout goes through
//! `pita::replay::dropout` under the path of the module that calls it, so a replayed run uses the
//! reference's masks.

use burn::module::Module;
use burn::nn::{Dropout, DropoutConfig, Embedding, EmbeddingConfig, LayerNorm, LayerNormConfig, Linear, LinearConfig};
use burn::tensor::activation::{gelu, gelu_approximate, softmax};
use burn::tensor::{Bool, Device, Int, Tensor};

use pita::record::tap;
use pita::replay::dropout;

use crate::plants::Plants;

/// The shape of `pytorch.py`'s `GPT2Config`, one of its `SIZES`.
#[derive(Clone, Copy, Debug)]
pub struct Size {
    pub vocab: usize,
    pub positions: usize,
    pub width: usize,
    pub layers: usize,
    pub heads: usize,
    /// `resid_pdrop`, `embd_pdrop` and `attn_pdrop`.
    pub dropout: f64,
}

impl Size {
    /// `--size tiny` (the default): 2 layers, width 64, 4 heads, a vocabulary of 96.
    pub const TINY: Size = Size { vocab: 96, positions: 32, width: 64, layers: 2, heads: 4, dropout: DROPOUT };
    /// `--size medium`: GPT-2 medium's shape, 355 M parameters (bench/large_port.py), dropout off:
    /// its reference recording is sharded, and `Replay::from_file` reads one file.
    pub const MEDIUM: Size = Size { vocab: 50257, positions: 1024, width: 1024, layers: 24, heads: 16, dropout: 0.0 };

    /// The size `pytorch.py --size NAME` builds.
    pub fn named(name: &str) -> Option<Size> {
        match name {
            "tiny" => Some(Size::TINY),
            "medium" => Some(Size::MEDIUM),
            _ => None,
        }
    }
}
/// `resid_pdrop`, `embd_pdrop` and `attn_pdrop`.
pub const DROPOUT: f64 = 0.1;
/// `layer_norm_epsilon`, also burn's LayerNorm default.
pub const LAYER_NORM_EPSILON: f64 = 1e-5;

/// `GPT2Attention`, eager: one packed `c_attn` projection to q, k, v; causal softmax attention
/// scaled by 1/√head_dim, with dropout on the attention weights (functional in transformers, so
/// its mask belongs to the attention module itself); `c_proj`; dropout on the residual branch.
#[derive(Module, Debug)]
pub struct Attention {
    pub c_attn: Linear,
    pub c_proj: Linear,
    pub attn_dropout: Dropout,
    pub resid_dropout: Dropout,
    pub n_head: usize,
}

impl Attention {
    fn new(size: Size, device: &Device) -> Self {
        let width = size.width;
        Attention {
            c_attn: LinearConfig::new(width, 3 * width).init(device),
            c_proj: LinearConfig::new(width, width).init(device),
            attn_dropout: DropoutConfig::new(size.dropout).init(),
            resid_dropout: DropoutConfig::new(size.dropout).init(),
            n_head: size.heads,
        }
    }

    // book:begin attention
    fn forward(&self, x: Tensor<3>, path: &str, plants: &Plants) -> Tensor<3> {
        let [b, t, d] = x.dims();
        let head_dim = d / self.n_head;
        let qkv = self.c_attn.forward(x);
        pita::tap!("{path}.c_attn", &qkv);
        let heads = |y: Tensor<3>| y.reshape([b, t, self.n_head, head_dim]).swap_dims(1, 2); // [b, h, t, head_dim]
        let [q, k, v] = [0, 1, 2].map(|i| heads(qkv.clone().narrow(2, i * d, d)));

        let mut scores = q.matmul(k.swap_dims(2, 3));
        if !plants.has("no-attn-scale") {
            scores = scores * (head_dim as f64).powf(-0.5); // transformers multiplies by head_dim ** -0.5
        }
        if !plants.has("no-causal-mask") {
            // true above the diagonal: a position attends to itself and the positions before it
            let future: Tensor<2, Bool> = Tensor::tril_mask([t, t], 0, &scores.device());
            scores = scores.mask_fill(future.reshape([1, 1, t, t]), f32::MIN); // torch.finfo(float32).min, as transformers
        }
        let weights = dropout(path, &self.attn_dropout, softmax(scores, 3));
        let context = weights.matmul(v).swap_dims(1, 2).reshape([b, t, d]);

        let y = self.c_proj.forward(context);
        pita::tap!("{path}.c_proj", &y);
        let path_resid = format!("{path}.resid_dropout");
        let y = dropout(&path_resid, &self.resid_dropout, y);
        tap(&path_resid, &y);
        y
    }
    // book:end
}

/// `GPT2MLP`: `c_fc`, GELU (transformers' `gelu_new`, the tanh approximation), `c_proj`, dropout.
#[derive(Module, Debug)]
pub struct Mlp {
    pub c_fc: Linear,
    pub c_proj: Linear,
    pub dropout: Dropout,
}

impl Mlp {
    fn new(size: Size, device: &Device) -> Self {
        let width = size.width;
        Mlp {
            c_fc: LinearConfig::new(width, 4 * width).init(device),
            c_proj: LinearConfig::new(4 * width, width).init(device),
            dropout: DropoutConfig::new(size.dropout).init(),
        }
    }

    // book:begin mlp
    fn forward(&self, x: Tensor<3>, path: &str, plants: &Plants) -> Tensor<3> {
        let h = self.c_fc.forward(x);
        pita::tap!("{path}.c_fc", &h);
        // NewGELUActivation is a module (`act`), so it has an activation of its own
        let h = if plants.has("gelu-exact") { gelu(h) } else { gelu_approximate(h) };
        pita::tap!("{path}.act", &h);
        let y = self.c_proj.forward(h);
        pita::tap!("{path}.c_proj", &y);
        let path_dropout = format!("{path}.dropout");
        let y = dropout(&path_dropout, &self.dropout, y);
        tap(&path_dropout, &y);
        y
    }
    // book:end
}

/// `GPT2Block`, pre-norm: x + attn(ln_1(x)), then x + mlp(ln_2(x)).
#[derive(Module, Debug)]
pub struct Block {
    pub ln_1: LayerNorm,
    pub attn: Attention,
    pub ln_2: LayerNorm,
    pub mlp: Mlp,
}

impl Block {
    fn forward(&self, x: Tensor<3>, path: &str, plants: &Plants) -> Tensor<3> {
        let h = self.ln_1.forward(x.clone());
        pita::tap!("{path}.ln_1", &h);
        let path_attn = format!("{path}.attn");
        let a = self.attn.forward(h, &path_attn, plants);
        tap(&path_attn, &a);
        let x = x + a;
        let h = self.ln_2.forward(x.clone());
        pita::tap!("{path}.ln_2", &h);
        let path_mlp = format!("{path}.mlp");
        let m = self.mlp.forward(h, &path_mlp, plants);
        tap(&path_mlp, &m);
        let y = x + m;
        tap(path, &y);
        y
    }
}

/// `GPT2Model`: token and position embeddings, dropout, the blocks, a final LayerNorm.
#[derive(Module, Debug)]
pub struct Transformer {
    pub wte: Embedding,
    pub wpe: Embedding,
    pub drop: Dropout,
    pub h: Vec<Block>,
    pub ln_f: LayerNorm,
}

impl Transformer {
    fn forward(&self, tokens: Tensor<2, Int>, plants: &Plants) -> Tensor<3> {
        let [_, t] = tokens.dims();
        let x = self.wte.forward(tokens);
        tap("transformer.wte", &x);
        let positions = Tensor::<1, Int>::arange(0..t as i64, &x.device()).reshape([1, t]);
        let p = self.wpe.forward(positions); // [1, t, d], broadcast over the batch
        tap("transformer.wpe", &p);
        let x = dropout("transformer.drop", &self.drop, x + p);
        tap("transformer.drop", &x);
        let x = self.h.iter().enumerate().fold(x, |x, (i, block)| block.forward(x, &format!("transformer.h.{i}"), plants));
        let x = self.ln_f.forward(x);
        tap("transformer.ln_f", &x);
        tap("transformer", &x); // GPT2Model's output (last_hidden_state)
        x
    }
}

/// `GPT2LMHeadModel`. `lm_head` is `None` in the port (tied to `transformer.wte`); the
/// `untied-head` plant makes it a Linear of its own, initialised from the embedding.
#[derive(Module, Debug)]
pub struct Gpt2 {
    pub transformer: Transformer,
    pub lm_head: Option<Linear>,
}

impl Gpt2 {
    /// A model of `size`'s shapes; its values are replaced by the PyTorch weights when loaded.
    /// `layer_norm_epsilon`: GPT-2's `LAYER_NORM_EPSILON` (the `layer-norm-eps` plant passes another).
    pub fn new(size: Size, device: &Device, layer_norm_epsilon: f64) -> Self {
        let layer_norm = || LayerNormConfig::new(size.width).with_epsilon(layer_norm_epsilon).init(device);
        let block = || Block { ln_1: layer_norm(), attn: Attention::new(size, device), ln_2: layer_norm(), mlp: Mlp::new(size, device) };
        Gpt2 {
            transformer: Transformer {
                wte: EmbeddingConfig::new(size.vocab, size.width).init(device),
                wpe: EmbeddingConfig::new(size.positions, size.width).init(device),
                drop: DropoutConfig::new(size.dropout).init(),
                h: (0..size.layers).map(|_| block()).collect(),
                ln_f: layer_norm(),
            },
            lm_head: None,
        }
    }

    /// tokens `[batch, seq]` -> logits `[batch, seq, vocab]`.
    pub fn forward(&self, tokens: Tensor<2, Int>, plants: &Plants) -> Tensor<3> {
        let x = self.transformer.forward(tokens, plants);
        let [b, t, d] = x.dims();
        let x = x.reshape([b * t, d]);
        let logits = match &self.lm_head {
            Some(head) => head.forward(x),
            None => x.matmul(self.transformer.wte.weight.val().transpose()), // tied: x wteᵀ
        };
        let [_, vocab] = logits.dims();
        let logits = logits.reshape([b, t, vocab]);
        tap("lm_head", &logits);
        logits
    }
}
