//! The classifier of `../pytorch.py`, ported to burn with burn's own modules. Every field is
//! named as the PyTorch attribute it ports (`embed`, `gru`, `drop`, `head`), so burn's module
//! paths are PyTorch's `named_parameters()` names; the forward taps each module's output under
//! its PyTorch path, where PyTorch's forward hooks fire.

use burn::module::Module;
use burn::nn::{Dropout, DropoutConfig, Embedding, EmbeddingConfig, Gru, GruConfig, Linear, LinearConfig};
use burn::tensor::{Device, Int, Tensor};

use pita::padding_idx::embedding_with_padding_idx;
use pita::record::tap;
use pita::replay;

use crate::plant;

/// The sizes of `pytorch.py`.
pub const VOCAB: usize = 40;
pub const EMBED: usize = 32;
pub const HIDDEN: usize = 48;
pub const CLASSES: usize = 5;
/// The padding token (`padding_idx`), at the end of the shorter sequences.
pub const PAD: i64 = 0;
pub const DROPOUT: f64 = 0.3;

/// `Embedding(40, 32, padding_idx=0)` -> `GRU(32, 48, batch_first=True)` -> its final state
/// -> `Dropout(0.3)` -> `Linear(48, 5)`.
#[derive(Module, Debug)]
pub struct CharGru {
    pub embed: Embedding,
    pub gru: Gru,
    pub drop: Dropout,
    pub head: Linear,
}

impl CharGru {
    /// A model of the right shapes; its values are replaced by the PyTorch weights when loaded.
    /// `dropout`: the head's dropout probability, [`DROPOUT`] (0 for `--no-dropout`).
    pub fn new(device: &Device, dropout: f64) -> Self {
        // burn's default, reset_after = true, is PyTorch's GRU: n = tanh(W_in x + b_in + r * (W_hn h + b_hn)).
        let reset_after = !plant("reset-after-false");
        CharGru {
            embed: EmbeddingConfig::new(VOCAB, EMBED).init(device),
            gru: GruConfig::new(EMBED, HIDDEN, true).with_reset_after(reset_after).init(device),
            drop: DropoutConfig::new(dropout).init(),
            head: LinearConfig::new(HIDDEN, CLASSES).init(device),
        }
    }

    /// tokens `[batch, seq]` (padded with [`PAD`] at the end) -> logits `[batch, classes]`.
    pub fn forward(&self, tokens: Tensor<2, Int>) -> Tensor<2> {
        let [batch, seq] = tokens.dims();
        // burn's Embedding has no padding_idx: the padding row would be trained.
        let x = if plant("padding-idx-lost") { self.embed.forward(tokens) } else { embedding_with_padding_idx(&self.embed, tokens, PAD) };
        tap("embed", &x);
        let output = self.gru.forward(x, None); // [batch, seq, hidden]; burn's Gru returns no h_n
        tap("gru", &output);
        // PyTorch's h_n[0] (layer 0's final state) is the output's last step.
        let step = if plant("h-n-as-first-step") { 0 } else { seq - 1 };
        let last = output.narrow(1, step, 1).reshape([batch, HIDDEN]);
        let x = replay::dropout("drop", &self.drop, last); // the reference's mask, when replaying
        tap("drop", &x);
        let logits = self.head.forward(x);
        tap("head", &logits);
        logits
    }
}
