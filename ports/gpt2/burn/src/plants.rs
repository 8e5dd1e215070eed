//! The mistakes `--plant` can put into the port, each one a port of GPT-2 really makes, and each
//! one small `if plants.has(...)` branch where the mistake would be made.

use std::collections::BTreeSet;

/// Each plant with what it does (`--help` prints them).
pub const PLANTS: [(&str, &str); 9] = [
    ("conv1d-through-adapter", "load: the weights through burn-store's PyTorch adapter, the Conv1D keys it rejects for their shapes loaded raw after it; the square attn.c_proj loads, transposed"),
    ("no-mask-replay", "forward: burn's own dropout masks, the reference's not replayed (seeding cannot align them)"),
    ("layer-norm-eps", "forward: every LayerNorm at 1e-12, BERT's epsilon, copied from another model's config (GPT-2's is 1e-5)"),
    ("gelu-exact", "forward: burn's `gelu` (erf) where GPT-2's `gelu_new` is the tanh approximation"),
    ("no-causal-mask", "forward: attention without the causal mask"),
    ("no-attn-scale", "forward: attention scores not scaled by 1/sqrt(head_dim)"),
    ("untied-head", "parameters: an lm_head Linear of its own, initialised from wte, where PyTorch ties it to wte"),
    ("loss-no-shift", "loss: the cross-entropy of position t against token t, not t + 1 (the labels not shifted)"),
    ("adamw-defaults", "step: AdamWConfig::new(), burn's defaults (epsilon 1e-5, weight decay 1e-4; PyTorch: 1e-8, 1e-2)"),
];

#[derive(Debug, Default)]
pub struct Plants(BTreeSet<String>);

impl Plants {
    /// `none`, or plant names, comma-separated; an unknown name is an error naming the plants.
    pub fn parse(lists: &[String]) -> Result<Self, String> {
        let mut plants = BTreeSet::new();
        for name in lists.iter().flat_map(|list| list.split(',')).filter(|name| *name != "none") {
            if !PLANTS.iter().any(|(plant, _)| *plant == name) {
                let known: Vec<&str> = PLANTS.iter().map(|(plant, _)| *plant).collect();
                return Err(format!("unknown plant {name:?}: the plants are {}, or none", known.join(", ")));
            }
            plants.insert(name.to_string());
        }
        Ok(Plants(plants))
    }

    pub fn has(&self, plant: &str) -> bool {
        self.0.contains(plant)
    }

    /// The recording's variant: `port` without a plant, else the plants joined by `+`.
    pub fn variant(&self) -> String {
        if self.0.is_empty() { "port".into() } else { self.0.iter().cloned().collect::<Vec<_>>().join("+") }
    }
}
