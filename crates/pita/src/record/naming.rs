//! The path a tensor of the model is recorded under: burn's, or PyTorch's with `torch_names`
//! (layouts, renamed fields of burn's composite modules, and the blocks of the tensors PyTorch
//! packs), the renames the port loaded PyTorch's weights with, and a prefix.

use std::collections::HashMap;
use std::fs::File;
use std::io::Read as _;
use std::path::Path;

use regex::Regex;

use crate::Error;

// burn's names of the module types (`Struct:<type>`, from the Module derive) whose tensors are
// named otherwise in PyTorch. burn-store's PyTorch adapter knows the first two kinds; the parity
// test against `BurnToPyTorchAdapter` (feature `store`) checks them.
const LINEAR: &str = "Struct:Linear";
const BATCH_NORM: &str = "Struct:BatchNorm";
const NORMS: [&str; 4] = [BATCH_NORM, "Struct:LayerNorm", "Struct:GroupNorm", "Struct:RmsNorm"];
const GATE: &str = "Struct:GateController";
const GRU: &str = "Struct:Gru";
const LSTM: &str = "Struct:Lstm";
const BIDIRECTIONAL: [&str; 2] = ["Struct:BiGru", "Struct:BiLstm"];
const ATTENTION: &str = "Struct:MultiHeadAttention";
const ENCODER_LAYER: &str = "Struct:TransformerEncoderLayer";
const FEED_FORWARD: &str = "Struct:PositionWiseFeedForward";

/// PyTorch's row blocks of a packed recurrent weight: nn.GRU's `[r | z | n]`, nn.LSTM's
/// `[i | f | g | o]`, by burn's gate field.
fn gate_block(rnn: &str, gate: &str) -> Option<(usize, usize)> {
    let gates: &[&str] = match rnn {
        GRU => &["reset_gate", "update_gate", "new_gate"],
        LSTM => &["input_gate", "forget_gate", "cell_gate", "output_gate"],
        _ => return None,
    };
    gates.iter().position(|g| *g == gate).map(|block| (block, gates.len()))
}

/// nn.MultiheadAttention's `in_proj_*` blocks `[q | k | v]`, by burn's Linear field.
fn projection_block(field: &str) -> Option<usize> {
    ["query", "key", "value"].iter().position(|f| *f == field)
}

/// A segment of a path in PyTorch's names: `None` leaves it out. `norm_first`: burn's
/// TransformerEncoderLayers are pre-norm, where `norm_2` comes before the attention (PyTorch's
/// `norm1`) and `norm_1` before the feed-forward (`norm2`).
fn torch_segment<'a>(path: &'a [String], containers: &[String], i: usize, norm_first: bool) -> Option<&'a str> {
    let (field, owner) = (path[i].as_str(), containers[i].as_str());
    if owner.starts_with("Enum:") {
        return None; // PyTorch has no enum modules
    }
    let inside_encoder_layer = i > 0 && containers[i - 1] == ENCODER_LAYER;
    Some(match (owner, field) {
        (ATTENTION, "output") => "out_proj",
        (ENCODER_LAYER, "mha") => "self_attn",
        (ENCODER_LAYER, "norm_1") => ["norm1", "norm2"][usize::from(norm_first)],
        (ENCODER_LAYER, "norm_2") => ["norm2", "norm1"][usize::from(norm_first)],
        (ENCODER_LAYER, "pwff") => return None, // nn.TransformerEncoderLayer holds linear1/linear2 itself
        // burn's one residual dropout is PyTorch's dropout1 (and dropout2); `dropout` is the feed-forward's
        (ENCODER_LAYER, "dropout") => "dropout1",
        (FEED_FORWARD, "linear_inner") if inside_encoder_layer => "linear1",
        (FEED_FORWARD, "linear_outer") if inside_encoder_layer => "linear2",
        _ => field,
    })
}

fn torch_path<'a>(path: &'a [String], containers: &[String], segments: std::ops::Range<usize>, norm_first: bool) -> Vec<&'a str> {
    segments.filter_map(|i| torch_segment(path, containers, i, norm_first)).collect()
}

/// The path of the module at burn's `path` in PyTorch's names (a module's own path, not a
/// tensor's: no leaf to rename).
pub(super) fn torch_module_path(path: &[String], containers: &[String], norm_first: bool) -> String {
    torch_path(path, containers, 0..path.len(), norm_first).join(".")
}

/// One block of a tensor PyTorch packs from several of burn's.
#[derive(Debug, PartialEq)]
pub(super) struct Block {
    /// The packed tensor's path (`gru.weight_ih_l0`).
    pub path: String,
    /// This tensor's block, counted from 0, of `blocks`, along axis 0.
    pub block: usize,
    pub blocks: usize,
    /// The depth (path length) of the module that holds every block: the pack is complete, or
    /// is not, once the traversal leaves it.
    pub depth: usize,
}

/// How a tensor of the model is recorded.
#[derive(Debug, PartialEq)]
pub(super) struct Naming {
    /// Its path as recorded alone (without the recorder's prefix).
    pub path: String,
    /// Written transposed (a Linear weight in PyTorch's `[out, in]`).
    pub transpose: bool,
    /// A buffer (BatchNorm's running statistics), not a parameter.
    pub buffer: bool,
    /// The packed tensor it is a block of, if PyTorch packs it.
    pub block: Option<Block>,
}

/// burn's path (a struct field is its name, a Vec element its index, an enum its variant), and
/// whether it is a buffer. `containers[i]` is the type of the module holding field `path[i]`.
pub(super) fn burn_naming(path: &[String], containers: &[String]) -> Naming {
    Naming { path: path.join("."), transpose: false, buffer: is_buffer(path, containers), block: None }
}

fn is_buffer(path: &[String], containers: &[String]) -> bool {
    matches!((containers.last().map(String::as_str), path.last().map(String::as_str)), (Some(BATCH_NORM), Some("running_mean" | "running_var")))
}

/// PyTorch's path and layout for a tensor of rank `rank`, by the module types holding it (the
/// module documentation of `record` lists the mapping); `norm_first` as in [`torch_segment`].
pub(super) fn torch_naming(path: &[String], containers: &[String], rank: usize, norm_first: bool) -> Naming {
    let n = path.len();
    let buffer = is_buffer(path, containers);
    let Some((leaf, holder)) = path.last().zip(containers.last()) else {
        return Naming { path: String::new(), transpose: false, buffer, block: None };
    };
    let (leaf, holder) = (leaf.as_str(), holder.as_str());
    let transpose = holder == LINEAR && leaf == "weight" && rank == 2;
    let leaf = match leaf {
        "gamma" if NORMS.contains(&holder) => "weight",
        "beta" if NORMS.contains(&holder) => "bias",
        other => other,
    };
    let mut alone = torch_path(path, containers, 0..n - 1, norm_first);
    alone.push(leaf);
    let block = (holder == LINEAR).then(|| packed_block(path, containers, leaf, norm_first)).flatten();
    Naming { path: alone.join("."), transpose, buffer, block }
}

/// The block of a packed tensor that the Linear parameter `path` (leaf `weight` or `bias`) is.
fn packed_block(path: &[String], containers: &[String], leaf: &str, norm_first: bool) -> Option<Block> {
    let n = path.len();
    // A gate of burn's Gru/Lstm: <rnn>.<gate>.<input|hidden>_transform.<leaf>.
    if n >= 3 && containers[n - 2] == GATE {
        let (block, blocks) = gate_block(&containers[n - 3], &path[n - 3])?;
        let side = match path[n - 2].as_str() {
            "input_transform" => "ih",
            "hidden_transform" => "hh",
            _ => return None,
        };
        // BiGru/BiLstm: <bi>.<forward|reverse>.<gate>…, PyTorch's bidirectional layer.
        let (owner_end, suffix) = match n >= 4 && BIDIRECTIONAL.contains(&containers[n - 4].as_str()) {
            true if path[n - 4] == "forward" => (n - 4, ""),
            true if path[n - 4] == "reverse" => (n - 4, "_reverse"),
            _ => (n - 3, ""),
        };
        let mut packed = torch_path(path, containers, 0..owner_end, norm_first);
        let name = format!("{leaf}_{side}_l0{suffix}");
        packed.push(&name);
        return Some(Block { path: packed.join("."), block, blocks, depth: n - 3 });
    }
    // q/k/v of burn's MultiHeadAttention: <mha>.<query|key|value>.<leaf>.
    if n >= 2 && containers[n - 2] == ATTENTION {
        let block = projection_block(&path[n - 2])?;
        let mut packed = torch_path(path, containers, 0..n - 2, norm_first);
        let name = format!("in_proj_{leaf}");
        packed.push(&name);
        return Some(Block { path: packed.join("."), block, blocks: 3, depth: n - 2 });
    }
    None
}

/// The renames the port loaded PyTorch's weights with, turned around: burn's path → the
/// PyTorch name it was loaded from.
#[derive(Debug, Default, Clone)]
pub(super) struct Renames {
    loaded_from: HashMap<String, String>,
}

impl Renames {
    /// Applies `renames` (regex → replacement, in order, each to the result of the one before, as
    /// burn-store's `KeyRemapper` does) to each PyTorch name; refuses two names that become the
    /// same burn path.
    pub fn new(pytorch_names: impl IntoIterator<Item = String>, renames: &[(Regex, String)]) -> Result<Self, Error> {
        let mut loaded_from: HashMap<String, String> = HashMap::new();
        for name in pytorch_names {
            let mut burn = name.clone();
            for (pattern, replacement) in renames {
                if pattern.is_match(&burn) {
                    burn = pattern.replace_all(&burn, replacement.as_str()).into_owned();
                }
            }
            if let Some(other) = loaded_from.get(&burn) {
                if *other != name {
                    return Err(Error::Recording { message: format!("renames: {other} and {name} both become {burn}") });
                }
            }
            loaded_from.insert(burn, name);
        }
        Ok(Renames { loaded_from })
    }

    /// Compiles `renames` (pattern, replacement) as regular expressions.
    pub fn compile(renames: &[(&str, &str)]) -> Result<Vec<(Regex, String)>, Error> {
        renames
            .iter()
            .map(|(pattern, replacement)| match Regex::new(pattern) {
                Ok(regex) => Ok((regex, replacement.to_string())),
                Err(error) => Err(Error::Recording { message: format!("renames: {pattern:?} is not a regular expression: {error}") }),
            })
            .collect()
    }

    /// The PyTorch name the tensor at burn's `path` was loaded from, if any. burn-store matches a
    /// loaded name against burn's path with or without enum variants, and a norm's
    /// `gamma`/`beta` against PyTorch's `weight`/`bias` as well: so does this.
    pub fn loaded_from(&self, path: &[String], containers: &[String]) -> Option<&str> {
        if self.loaded_from.is_empty() {
            return None;
        }
        let without_enums: Vec<String> =
            path.iter().zip(containers).filter(|(_, owner)| !owner.starts_with("Enum:")).map(|(segment, _)| segment.clone()).collect();
        let norm_leaf = match (containers.last().map(String::as_str), path.last().map(String::as_str)) {
            (Some(holder), Some("gamma")) if NORMS.contains(&holder) => Some("weight"),
            (Some(holder), Some("beta")) if NORMS.contains(&holder) => Some("bias"),
            _ => None,
        };
        for segments in [path, &without_enums[..]] {
            let mut keys = vec![segments.join(".")];
            if let (Some(leaf), Some((_, parents))) = (norm_leaf, segments.split_last()) {
                keys.push(parents.iter().map(String::as_str).chain([leaf]).collect::<Vec<_>>().join("."));
            }
            if let Some(name) = keys.iter().find_map(|key| self.loaded_from.get(key)) {
                return Some(name);
            }
        }
        None
    }
}

/// The tensor names in a safetensors file (its header only is read), or in a sharded
/// checkpoint's index (`model.safetensors.index.json`, its `weight_map`): the names a port's
/// `SafetensorsStore` loads, for [`Recorder::torch_names_from`](super::Recorder::torch_names_from).
pub fn safetensors_names(path: impl AsRef<Path>) -> Result<Vec<String>, Error> {
    let path = path.as_ref();
    let invalid = |why: String| Error::io(path, std::io::Error::new(std::io::ErrorKind::InvalidData, why));
    let mut file = File::open(path).map_err(|e| Error::io(path, e))?;
    let header: serde_json::Value = if path.extension().is_some_and(|e| e == "json") {
        let index: serde_json::Value = serde_json::from_reader(file).map_err(|e| invalid(format!("not a JSON index: {e}")))?;
        index.get("weight_map").cloned().ok_or_else(|| invalid("a sharded checkpoint's index has a weight_map; this one has none".into()))?
    } else {
        let mut size = [0u8; 8];
        file.read_exact(&mut size).map_err(|e| invalid(format!("not a safetensors file: {e}")))?;
        let size = u64::from_le_bytes(size);
        const MAX_HEADER: u64 = 100_000_000; // safetensors' own limit
        if size > MAX_HEADER {
            return Err(invalid(format!("not a safetensors file: a header of {size} bytes")));
        }
        let mut header = vec![0u8; size as usize];
        file.read_exact(&mut header).map_err(|e| invalid(format!("not a safetensors file: {e}")))?;
        serde_json::from_slice(&header).map_err(|e| invalid(format!("not a safetensors file: {e}")))?
    };
    let names = header.as_object().ok_or_else(|| invalid("its header is not a JSON object".into()))?;
    Ok(names.keys().filter(|name| *name != "__metadata__").cloned().collect())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A parameter's path and the types holding each segment, from `field<Type>` segments:
    /// `"gru<Net>.update_gate<Gru>.input_transform<GateController>.weight<Linear>"`.
    fn at(spec: &str) -> (Vec<String>, Vec<String>) {
        spec.split('.')
            .map(|segment| {
                let (field, owner) = segment.split_once('<').expect("field<Type>");
                let owner = owner.trim_end_matches('>');
                let kind = if owner == "Vec" || owner.starts_with("Enum:") { owner.to_string() } else { format!("Struct:{owner}") };
                (field.to_string(), kind)
            })
            .unzip()
    }

    fn torch(spec: &str, rank: usize) -> Naming {
        let (path, containers) = at(spec);
        torch_naming(&path, &containers, rank, false)
    }

    fn block(path: &str, block: usize, blocks: usize, depth: usize) -> Option<Block> {
        Some(Block { path: path.to_string(), block, blocks, depth })
    }

    #[test]
    fn gru_gates_are_blocks_of_pytorchs_packed_tensors() {
        let gate = |gate: &str, side: &str, leaf: &str, rank| torch(&format!("rnn<Net>.{gate}<Gru>.{side}<GateController>.{leaf}<Linear>"), rank);
        // nn.GRU's rows are [r | z | n]: the reset gate first, though burn declares update_gate first.
        for (i, name) in ["reset_gate", "update_gate", "new_gate"].iter().enumerate() {
            let weight = gate(name, "input_transform", "weight", 2);
            assert_eq!(weight.block, block("rnn.weight_ih_l0", i, 3, 1), "{name}");
            assert!(weight.transpose);
            assert_eq!(weight.path, format!("rnn.{name}.input_transform.weight"));
            assert_eq!(gate(name, "hidden_transform", "bias", 1).block, block("rnn.bias_hh_l0", i, 3, 1));
            assert!(!gate(name, "hidden_transform", "bias", 1).transpose);
        }
        assert_eq!(gate("update_gate", "hidden_transform", "weight", 2).block, block("rnn.weight_hh_l0", 1, 3, 1));
        assert_eq!(gate("new_gate", "input_transform", "bias", 1).block, block("rnn.bias_ih_l0", 2, 3, 1));
    }

    #[test]
    fn lstm_gates_are_blocks_in_pytorchs_order() {
        for (i, name) in ["input_gate", "forget_gate", "cell_gate", "output_gate"].iter().enumerate() {
            let naming = torch(&format!("layers<Net>.0<Vec>.{name}<Lstm>.input_transform<GateController>.weight<Linear>"), 2);
            assert_eq!(naming.block, block("layers.0.weight_ih_l0", i, 4, 2), "{name}");
        }
        // A bidirectional LSTM: the reverse direction's tensors end in _reverse.
        let reverse = torch("bi<Net>.reverse<BiLstm>.cell_gate<Lstm>.hidden_transform<GateController>.bias<Linear>", 1);
        assert_eq!(reverse.block, block("bi.bias_hh_l0_reverse", 2, 4, 2));
        let forward = torch("bi<Net>.forward<BiGru>.new_gate<Gru>.input_transform<GateController>.weight<Linear>", 2);
        assert_eq!(forward.block, block("bi.weight_ih_l0", 2, 3, 2));
        // A GateController outside burn's recurrent modules is a module of its own.
        assert_eq!(torch("cell<Mine>.gate<GateController>.weight<Linear>", 2).block, None);
    }

    #[test]
    fn attention_and_encoder_layers_have_pytorchs_names() {
        let layer = "enc<Net>.layers<TransformerEncoder>.0<Vec>";
        let query = torch(&format!("{layer}.mha<TransformerEncoderLayer>.query<MultiHeadAttention>.weight<Linear>"), 2);
        assert_eq!(query.block, block("enc.layers.0.self_attn.in_proj_weight", 0, 3, 4));
        let value = torch(&format!("{layer}.mha<TransformerEncoderLayer>.value<MultiHeadAttention>.bias<Linear>"), 1);
        assert_eq!(value.block, block("enc.layers.0.self_attn.in_proj_bias", 2, 3, 4));
        let single = |spec: &str, rank| {
            let naming = torch(&format!("{layer}.{spec}"), rank);
            assert_eq!(naming.block, None, "{spec}");
            naming.path
        };
        assert_eq!(single("mha<TransformerEncoderLayer>.output<MultiHeadAttention>.weight<Linear>", 2), "enc.layers.0.self_attn.out_proj.weight");
        assert_eq!(single("pwff<TransformerEncoderLayer>.linear_inner<PositionWiseFeedForward>.bias<Linear>", 1), "enc.layers.0.linear1.bias");
        assert_eq!(single("pwff<TransformerEncoderLayer>.linear_outer<PositionWiseFeedForward>.weight<Linear>", 2), "enc.layers.0.linear2.weight");
        assert_eq!(single("norm_1<TransformerEncoderLayer>.gamma<LayerNorm>", 1), "enc.layers.0.norm1.weight");
        assert_eq!(single("norm_2<TransformerEncoderLayer>.beta<LayerNorm>", 1), "enc.layers.0.norm2.bias");
        let pre_norm = |spec: &str| {
            let (path, containers) = at(&format!("{layer}.{spec}"));
            torch_naming(&path, &containers, 1, true).path
        };
        assert_eq!(pre_norm("norm_2<TransformerEncoderLayer>.gamma<LayerNorm>"), "enc.layers.0.norm1.weight");
        assert_eq!(pre_norm("norm_1<TransformerEncoderLayer>.beta<LayerNorm>"), "enc.layers.0.norm2.bias");
        // A feed-forward block of the user's own keeps burn's field names.
        assert_eq!(torch("ff<Net>.linear_inner<PositionWiseFeedForward>.weight<Linear>", 2).path, "ff.linear_inner.weight");
    }

    #[test]
    fn buffers_and_enums() {
        let (path, containers) = at("head<Net>.Conv<Enum:Head>.bn<ConvBlock>.running_var<BatchNorm>");
        let torch = torch_naming(&path, &containers, 1, false);
        assert_eq!((torch.path.as_str(), torch.buffer), ("head.bn.running_var", true));
        let burn = burn_naming(&path, &containers);
        assert_eq!((burn.path.as_str(), burn.buffer), ("head.Conv.bn.running_var", true));
        assert!(!burn_naming(&at("bn<Net>.gamma<BatchNorm>").0, &at("bn<Net>.gamma<BatchNorm>").1).buffer);
    }

    #[test]
    fn renames_are_applied_forward_to_the_loaded_names() {
        let renames = Renames::compile(&[(r"^bert\.", ""), (r"\.attention\.self\.(query|key|value)\.", ".mha.$1."), (r"LayerNorm", "norm")]).unwrap();
        let names = ["bert.encoder.attention.self.query.weight", "bert.embeddings.LayerNorm.weight", "cls.bias"].map(String::from);
        let renames = Renames::new(names, &renames).unwrap();
        let (path, containers) = at("encoder<Net>.mha<Block>.query<MultiHeadAttention>.weight<Linear>");
        assert_eq!(renames.loaded_from(&path, &containers), Some("bert.encoder.attention.self.query.weight"));
        // A norm's gamma is found by PyTorch's leaf name, as burn-store's adapter finds it.
        let (path, containers) = at("embeddings<Net>.norm<Embeddings>.gamma<LayerNorm>");
        assert_eq!(renames.loaded_from(&path, &containers), Some("bert.embeddings.LayerNorm.weight"));
        let (path, containers) = at("embeddings<Net>.norm<Embeddings>.beta<LayerNorm>");
        assert_eq!(renames.loaded_from(&path, &containers), None);
        // Enum variants may or may not be in the path burn-store matched.
        let (path, containers) = at("cls<Net>.Dense<Enum:Head>.bias<Linear>");
        assert_eq!(renames.loaded_from(&path, &containers), Some("cls.bias"));
    }

    #[test]
    fn renames_refuse_what_they_cannot_turn_around() {
        let error = Renames::compile(&[("(", "")]).unwrap_err();
        assert!(error.to_string().starts_with("renames: \"(\" is not a regular expression"), "{error}");
        let renames = Renames::compile(&[(r"^(a|b)\.", "x.")]).unwrap();
        let error = Renames::new(["a.w".to_string(), "b.w".to_string()], &renames).unwrap_err();
        assert_eq!(error.to_string(), "renames: a.w and b.w both become x.w");
    }

    #[test]
    fn reads_the_names_of_a_safetensors_file_and_of_an_index() {
        let dir = std::env::temp_dir().join(format!("pita-names-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let data = [0u8; 8];
        let view = |shape| safetensors::tensor::TensorView::new(safetensors::tensor::Dtype::F32, shape, &data).unwrap();
        let file = dir.join("model.safetensors");
        let metadata = Some(HashMap::from([("format".to_string(), "pt".to_string())]));
        std::fs::write(&file, safetensors::serialize([("fc.weight", view(vec![2])), ("fc.bias", view(vec![1, 2]))], metadata).unwrap()).unwrap();
        let mut names = safetensors_names(&file).unwrap();
        names.sort();
        assert_eq!(names, ["fc.bias", "fc.weight"]);
        let index = dir.join("model.safetensors.index.json");
        std::fs::write(&index, r#"{"metadata": {}, "weight_map": {"a.weight": "model-1.safetensors", "b.bias": "model-2.safetensors"}}"#).unwrap();
        assert_eq!(safetensors_names(&index).unwrap(), ["a.weight", "b.bias"]);
        std::fs::write(&file, b"not safetensors").unwrap();
        assert!(matches!(safetensors_names(&file), Err(Error::Io { .. })));
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
