//! The settings of every module of a model (metadata `modules`) and of the loss (`loss_fn`), in
//! burn's own names, read from burn's `ModuleDisplay`: the module traversal tells which fields are
//! modules and parameters, burn's display their values. Two displays are read: every field
//! (`show_all_attributes`, which reaches every module) and burn's own (each module's
//! `custom_content`: `d_model`, `bias`, …, where the module it sits in shows it).

use std::any::Any;
use std::collections::{HashMap, HashSet};

use burn::module::{DisplaySettings, Module, ModuleDisplay, ModuleVisitor, Param};
use burn::nn::loss::{BinaryCrossEntropyLoss, CrossEntropyLoss};
use burn::tensor::{Bool, DType, DataError, Int, Tensor};
use serde_json::{Map, Value};

use super::naming::torch_module_path;
use super::visit::Names;
use crate::Error;

/// The modules PyTorch implements as one: their inner modules (gates, q/k/v projections) are
/// not recorded; a Dropout among them is their setting `<field>: prob`, as burn's
/// MultiHeadAttention display writes it.
const ONE_MODULE: [&str; 5] = ["Gru", "Lstm", "BiGru", "BiLstm", "MultiHeadAttention"];
/// Inner modules of [`ONE_MODULE`] recorded all the same: MultiHeadAttention's `output` (PyTorch's `out_proj`).
const RECORDED_INSIDE: [(&str, &str); 1] = [("MultiHeadAttention", "output")];

/// `{"<module path>": {"kind": …, "settings": {…}}}` of `model`, paths named as its parameters are.
pub(super) fn modules<M: Module + ModuleDisplay>(model: &M, names: &Names) -> Map<String, Value> {
    let mut shape = Shape::default();
    model.visit(&mut shape);
    let all = Shown::parse(&model.format(display(true)));
    let own = Shown::parse(&model.format(display(false)));
    let mut walk = Walk { shape, names, found: Map::new() };
    walk.module(&all, Some(&own), &mut Vec::new(), &mut Vec::new());
    walk.found
}

/// `{"kind": …, "settings": {…}}` of a loss module: its settings as [`modules`] reads them, and
/// the class `weights` of burn's cross-entropy losses, a tensor whose display shows its shape only.
pub(super) fn loss_fn<M: Module + ModuleDisplay + 'static>(loss: &M) -> Result<Value, Error> {
    let mut shape = Shape::default();
    loss.visit(&mut shape);
    let all = Shown::parse(&loss.format(display(true)));
    let own = Shown::parse(&loss.format(display(false)));
    let (kind, mut settings) = own_settings(&shape, &all, Some(&own), &[]);
    let any: &dyn Any = loss;
    let weights = match (any.downcast_ref::<CrossEntropyLoss>(), any.downcast_ref::<BinaryCrossEntropyLoss>()) {
        (Some(loss), _) => Some(&loss.weights),
        (_, Some(loss)) => Some(&loss.weights),
        _ => None,
    };
    if let Some(weights) = weights {
        settings.insert("weights".to_string(), weights.as_ref().map(tensor_values).transpose()?.unwrap_or(Value::Null));
    }
    Ok(serde_json::json!({"kind": kind, "settings": settings}))
}

/// A tensor's values as a JSON list, each float at its own dtype's shortest decimal (through the
/// text: serde_json writes an f32 so).
fn tensor_values(tensor: &Tensor<1>) -> Result<Value, Error> {
    let data = tensor.to_data();
    let text = match tensor.dtype() {
        DType::F64 => serde_json::to_string(&data.try_to_vec::<f64>().map_err(data_error)?),
        _ => serde_json::to_string(&data.convert::<f32>().try_to_vec::<f32>().map_err(data_error)?),
    };
    let serialize = |e: serde_json::Error| Error::Serialize { message: e.to_string() };
    serde_json::from_str(&text.map_err(serialize)?).map_err(serialize)
}

fn data_error(error: DataError) -> Error {
    Error::Recording { message: format!("loss_fn: the weights cannot be read: {error:?}") }
}

/// One line, no parameter counts; `all`: every field rather than the module's own display.
fn display(all: bool) -> DisplaySettings {
    DisplaySettings::new().with_new_line_after_attribute(false).with_show_num_parameters(false).with_show_all_attributes(all)
}

/// What the traversal says of the model: each entered path's container type (`Struct:Linear`,
/// `Vec`, `Enum:Head`, …: the type holding that field) and the paths of its parameters.
#[derive(Default)]
struct Shape {
    path: Vec<String>,
    containers: HashMap<Vec<String>, String>,
    parameters: HashSet<Vec<String>>,
}

impl Shape {
    fn parameter(&mut self) {
        self.parameters.insert(self.path.clone());
    }

    /// The field `name` of the module at `path`, as the traversal saw it.
    fn field(&self, path: &[String], name: &str) -> Field {
        let mut field = path.to_vec();
        field.push(name.to_string());
        if self.parameters.contains(&field) {
            Field::Parameter
        } else if self.containers.contains_key(&field) {
            Field::Module
        } else {
            Field::Setting
        }
    }

    /// The variant segment under `path` when the module there is an enum (`Enum:<type>` holds it).
    fn variant(&self, path: &[String]) -> Option<&str> {
        self.containers
            .iter()
            .find(|(child, container)| child.len() == path.len() + 1 && child.starts_with(path) && container.starts_with("Enum:"))
            .map(|(child, _)| child[path.len()].as_str())
    }
}

#[derive(PartialEq)]
enum Field {
    Parameter,
    Module,
    Setting,
}

impl ModuleVisitor for Shape {
    fn enter_module(&mut self, name: &str, container_type: &str) {
        self.path.push(name.to_string());
        self.containers.insert(self.path.clone(), container_type.to_string());
    }
    fn exit_module(&mut self, _name: &str, _container_type: &str) {
        self.path.pop();
    }
    fn visit_float<const D: usize>(&mut self, _param: &Param<Tensor<D>>) {
        self.parameter();
    }
    fn visit_int<const D: usize>(&mut self, _param: &Param<Tensor<D, Int>>) {
        self.parameter();
    }
    fn visit_bool<const D: usize>(&mut self, _param: &Param<Tensor<D, Bool>>) {
        self.parameter();
    }
    fn visit_flag(&mut self, _flag: &Param<burn::module::Flag>) {
        self.parameter();
    }
}

/// A module as burn's display shows it: `Kind {name: value, …}` or a bare `Kind`.
#[derive(Debug, PartialEq)]
pub(super) struct Shown {
    pub kind: String,
    pub fields: Vec<(String, String)>,
}

impl Shown {
    /// Reads `Kind {a: 1, b: Explicit(1, 1), c: Inner {x: [1, 2]}}`; text without a body at its
    /// end (`Relu`, `None`) is a bare kind.
    pub fn parse(text: &str) -> Shown {
        let text = text.trim();
        let body = text.strip_suffix('}').and_then(|inner| top_level(inner, '{').map(|open| (open, inner)));
        let Some((open, inner)) = body else {
            return Shown { kind: text.to_string(), fields: Vec::new() };
        };
        let fields = split_top_level(&inner[open + 1..])
            .into_iter()
            .filter_map(|field| field.split_once(':').map(|(name, value)| (name.trim().to_string(), value.trim().to_string())))
            .collect();
        Shown { kind: inner[..open].trim().to_string(), fields }
    }

    fn field(&self, name: &str) -> Option<&str> {
        self.fields.iter().find(|(field, _)| field == name).map(|(_, value)| value.as_str())
    }

    /// burn's containers, which PyTorch's paths go through without a module of their own.
    fn is_container(&self) -> bool {
        self.kind.starts_with("Vec<") || self.kind.starts_with("[0..") || self.kind.starts_with('(')
    }
}

/// The byte index of the first `wanted` outside brackets and quotes.
fn top_level(text: &str, wanted: char) -> Option<usize> {
    let mut depth = 0i32;
    let mut quoted = false;
    let mut escaped = false;
    for (i, c) in text.char_indices() {
        if quoted {
            (escaped, quoted) = match (escaped, c) {
                (true, _) => (false, true),
                (false, '\\') => (true, true),
                (false, '"') => (false, false),
                _ => (false, true),
            };
            continue;
        }
        match c {
            _ if c == wanted && depth == 0 => return Some(i),
            '"' => quoted = true,
            '(' | '[' | '{' | '<' => depth += 1,
            ')' | ']' | '}' | '>' => depth -= 1,
            _ => {}
        }
    }
    None
}

/// `text` split at its top-level commas (none inside brackets or quotes), empty parts left out.
fn split_top_level(text: &str) -> Vec<&str> {
    let mut parts = Vec::new();
    let mut rest = text;
    while let Some(comma) = top_level(rest, ',') {
        parts.push(&rest[..comma]);
        rest = &rest[comma + 1..];
    }
    parts.push(rest);
    parts.into_iter().map(str::trim).filter(|part| !part.is_empty()).collect()
}

/// A displayed value as JSON: `true`/`false`, a number (an f64 as written: burn's `1e-12`),
/// `None` → null, `Some(x)` → x, `[a, b]` → a list, a quoted string → the string; anything
/// else (an enum such as `Explicit(1, 1, 1, 1)`, a struct) → its text.
pub(super) fn setting_value(text: &str) -> Value {
    let text = text.trim();
    match text {
        "true" => return Value::Bool(true),
        "false" => return Value::Bool(false),
        "None" => return Value::Null,
        _ => {}
    }
    if let Some(inner) = text.strip_prefix("Some(").and_then(|t| t.strip_suffix(')')).filter(|inner| top_level(inner, ')').is_none()) {
        return setting_value(inner);
    }
    if let Some(items) = text.strip_prefix('[').and_then(|t| t.strip_suffix(']')).filter(|inner| top_level(inner, ']').is_none()) {
        return Value::Array(split_top_level(items).into_iter().map(setting_value).collect());
    }
    if text.starts_with('"') {
        if let Ok(Value::String(string)) = serde_json::from_str(text) {
            return Value::String(string);
        }
    }
    if let Ok(integer) = text.parse::<i64>() {
        return integer.into();
    }
    let numeric = text.starts_with(|c: char| c.is_ascii_digit() || c == '-' || c == '.');
    match text.parse::<f64>() {
        Ok(number) if numeric && number.is_finite() => number.into(),
        _ => Value::String(text.to_string()),
    }
}

/// The kind and settings of the module `all` shows (`own`: burn's own display of it, where its
/// holder shows it) at burn's `path`: its fields that are neither modules nor parameters, the
/// names burn's display adds (`d_model`, `bias`, …; the fields' values win, being the exact
/// ones), and `bias`: whether its `bias` parameter is present.
fn own_settings(shape: &Shape, all: &Shown, own: Option<&Shown>, path: &[String]) -> (String, Map<String, Value>) {
    let mut settings = Map::new();
    for (name, value) in &all.fields {
        match shape.field(path, name) {
            Field::Setting => {
                settings.insert(name.clone(), setting_value(value));
            }
            _ if name == "bias" => {
                settings.insert(name.clone(), Value::Bool(value != "None"));
            }
            _ => {}
        }
    }
    for (name, value) in own.filter(|own| own.kind == all.kind).map(|own| own.fields.as_slice()).unwrap_or_default() {
        let child = all.field(name).map(|shown| Shown::parse(shown).kind);
        let is_the_child = shape.field(path, name) != Field::Setting && child == Some(Shown::parse(value).kind);
        if !is_the_child && !settings.contains_key(name) {
            settings.insert(name.clone(), setting_value(value));
        }
    }
    (all.kind.clone(), settings)
}

struct Walk<'n> {
    shape: Shape,
    names: &'n Names,
    found: Map<String, Value>,
}

impl Walk<'_> {
    /// Records the module `all` shows at burn's `path`, then the modules inside it.
    fn module(&mut self, all: &Shown, own: Option<&Shown>, path: &mut Vec<String>, containers: &mut Vec<String>) {
        let children: Vec<&(String, String)> = all.fields.iter().filter(|(name, _)| self.shape.field(path, name) == Field::Module).collect();
        if !all.is_container() {
            let (kind, mut settings) = own_settings(&self.shape, all, own, path);
            if ONE_MODULE.contains(&kind.as_str()) {
                for (name, value) in &children {
                    let inner = Shown::parse(value);
                    // Its field's exact value, over the display's (which writes an f64 0.0 as `0`).
                    if let Some(prob) = inner.field("prob").filter(|_| inner.kind == "Dropout") {
                        settings.insert(name.clone(), setting_value(prob));
                    }
                }
            }
            if !settings.is_empty() || children.is_empty() {
                self.record(self.module_path(all, path, containers), kind, settings);
            }
        }
        let own_kind = own.filter(|own| own.kind == all.kind);
        for (name, value) in children {
            if ONE_MODULE.contains(&all.kind.as_str()) && !RECORDED_INSIDE.contains(&(all.kind.as_str(), name.as_str())) {
                continue;
            }
            let child = Shown::parse(value);
            if child.kind == "None" {
                continue; // an Option left empty
            }
            let child_own = own_kind.and_then(|own| own.field(name)).map(Shown::parse);
            path.push(name.clone());
            containers.push(self.shape.containers[&path[..]].clone());
            match self.shape.variant(path).map(str::to_string) {
                // An enum: `Variant {_0: Inner {…}}`, the inner module at <path>.<Variant>.
                Some(variant) => {
                    let inner = child.field("_0").map(Shown::parse);
                    let inner_own = child_own.as_ref().and_then(|own| own.field("_0")).map(Shown::parse);
                    path.push(variant);
                    containers.push(self.shape.containers[&path[..]].clone());
                    if let Some(inner) = inner {
                        self.module(&inner, inner_own.as_ref(), path, containers);
                    }
                    path.pop();
                    containers.pop();
                }
                None => self.module(&child, child_own.as_ref(), path, containers),
            }
            path.pop();
            containers.pop();
        }
    }

    /// The path the module's parameters are recorded under, less their leaf; for a module without
    /// a parameter of its own, its field path named by the same rules (and prefix).
    fn module_path(&self, all: &Shown, path: &[String], containers: &[String]) -> String {
        let parameter = all.fields.iter().find(|(name, _)| self.shape.field(path, name) == Field::Parameter);
        if let Some((name, _)) = parameter {
            let mut parameter_path = path.to_vec();
            parameter_path.push(name.clone());
            let mut parameter_containers = containers.to_vec();
            parameter_containers.push(self.shape.containers[&parameter_path].clone());
            let named = self.names.naming(&parameter_path, &parameter_containers, 0).path;
            return named.rsplit_once('.').map(|(module, _)| module.to_string()).unwrap_or_default();
        }
        let path = match self.names.torch {
            true => torch_module_path(path, containers, self.names.norm_first),
            false => path.join("."),
        };
        match (path.is_empty(), self.names.prefix.as_str()) {
            (true, prefix) => prefix.strip_suffix('.').unwrap_or(prefix).to_string(),
            (false, prefix) => format!("{prefix}{path}"),
        }
    }

    /// Adds a module; one at a path recorded already (burn's PositionWiseFeedForward inside a
    /// TransformerEncoderLayer, whose linears PyTorch's layer holds itself) adds the settings the
    /// first lacks.
    fn record(&mut self, path: String, kind: String, settings: Map<String, Value>) {
        match self.found.get_mut(&path).and_then(|entry| entry["settings"].as_object_mut()) {
            Some(first) => {
                for (name, value) in settings {
                    first.entry(name).or_insert(value);
                }
            }
            None => {
                self.found.insert(path, serde_json::json!({"kind": kind, "settings": settings}));
            }
        }
    }
}
