//! Recording a training run for `pita trace` (docs/recording.md in the pita repository): the
//! parameters, the activations of the first forward pass in execution order, the loss, the
//! gradients and the parameters after each optimizer step, in one [`Dump`] whose names follow
//! the recording convention (`param/…`, `act/…`, `loss/<k>`, `grad/…`, `step<k>/…`).
//!
//! ```rust
//! use burn::module::Module;
//! use burn::nn::{LayerNorm, LayerNormConfig, Linear, LinearConfig};
//! use burn::tensor::{Device, Tensor};
//! use pita::dump::Dump;
//! use pita::record::{tap, Recorder};
//!
//! #[derive(Module, Debug)]
//! struct Net {
//!     fc1: Linear,
//!     norm: LayerNorm,
//! }
//!
//! impl Net {
//!     fn forward(&self, x: Tensor<2>) -> Tensor<2> {
//!         let x = self.fc1.forward(x);
//!         tap("fc1", &x); // a no-op unless a recorder listens on this thread
//!         let x = self.norm.forward(x);
//!         tap("norm", &x);
//!         x
//!     }
//! }
//!
//! # fn main() -> Result<(), pita::Error> {
//! let device = Device::flex().autodiff();
//! let model = Net { fc1: LinearConfig::new(3, 2).init(&device), norm: LayerNormConfig::new(2).init(&device) };
//! let inputs = Tensor::<2>::from_floats([[0.5, -1.0, 2.0]], &device);
//!
//! let mut recorder = Recorder::new().torch_names(true); // PyTorch names and layouts
//! recorder.params(&model)?;                             // param/fc1.weight ([2, 3]), param/norm.weight, …
//! let loss = {
//!     let _listening = recorder.listen();               // taps record while this guard lives
//!     model.forward(inputs).powi_scalar(2).mean()
//! };
//! recorder.loss(1, &loss)?;                             // loss/1
//! # #[cfg(feature = "autodiff")]
//! recorder.grads(&model, &loss.backward())?;            // grad/fc1.weight ([2, 3]), … (feature `autodiff`)
//! // ... the optimizer step ...
//! recorder.step(1, &model)?;                            // step1/fc1.weight, …
//! assert_eq!(recorder.execution_order(), ["act/fc1", "act/norm"]);
//!
//! let dump = recorder.into_dump(Dump::builder().variant("record"))?;
//! assert_eq!(dump.metadata()["recording"], "pita-record/1");
//! assert_eq!(dump.metadata()["execution_order"], r#"["act/fc1","act/norm"]"#);
//! assert_eq!(dump.get("param/fc1.weight").unwrap().shape(), [2, 3]);
//! # Ok(())
//! # }
//! ```
//!
//! # Names
//!
//! Parameters are named by burn's module traversal ([`Module::visit`]): a struct field is its
//! name, a `Vec` element its index (`layers.0.weight`), an `Option` adds nothing, so a port whose
//! fields are named as the PyTorch attributes gets PyTorch's `named_parameters()` paths. Only
//! float tensors are recorded (int and bool tensors are not parameters in PyTorch).
//!
//! With [`torch_names(true)`](Recorder::torch_names), names and layouts follow burn-store's
//! `BurnToPyTorchAdapter` (the adapter burn uses to write PyTorch files), by the innermost module
//! type holding the parameter:
//!
//! - `Linear`: `weight` is written transposed, `[out, in]` (burn keeps `[in, out]`); its
//!   gradient too;
//! - `LayerNorm`, `BatchNorm`, `GroupNorm`, `RmsNorm`: `gamma` → `weight`, `beta` → `bias`;
//! - `BatchNorm`'s `running_mean` and `running_var` are left out: PyTorch keeps them as buffers,
//!   not in `named_parameters()`;
//! - enum variant names are left out of the paths (PyTorch has no enum modules).
//!
//! Embedding and convolution weights have PyTorch's names and layouts already. What is not
//! mapped, as burn-store does not map it: `MultiHeadAttention`'s `query`/`key`/`value`/`output`
//! Linears (PyTorch packs `in_proj_weight`/`in_proj_bias` and names `out_proj`), `InstanceNorm`'s
//! `gamma`/`beta` (PyTorch: `weight`/`bias`), `PRelu`'s `alpha` (PyTorch: `weight`), the gate
//! Linears of burn's `Lstm`/`Gru` (PyTorch packs `weight_ih_l0`, `weight_hh_l0`, …), and any
//! field named differently from the PyTorch attribute. A rules file (`pita trace --rules`)
//! renames what remains. Values are the ones the forward pass uses (`Param::val`), so a
//! `Linear` stored in burn's `LinearLayout::Col` is written `[out, in]` as well.

use std::cell::{Cell, RefCell};
use std::collections::{BTreeSet, HashMap, HashSet};
use std::fmt;
use std::marker::PhantomData;

use burn::module::{Module, ModuleVisitor, Param};
#[cfg(feature = "autodiff")]
use burn::tensor::Gradients;
use burn::tensor::{DType, Tensor};

use crate::dump::{Dump, DumpBuilder};
use crate::Error;

/// The `recording` metadata key's value: the dump follows docs/recording.md.
pub const RECORDING: &str = "pita-record/1";

/// The metadata keys a recorder sets (docs/recording.md): [`Recorder::into_dump`]'s, `no_grad`
/// only when a parameter had no gradient, and those only `pita.torch` writes (`densified`,
/// `reference64`); a builder that already holds one is refused.
pub const RECORDING_KEYS: [&str; 10] = [
    "recording",
    "execution_order",
    "steps",
    "dtype",
    "no_grad",
    "densified",
    "buffers",
    "optimizer",
    "reference64",
    "masks_replayed",
];

// The convention's names, as `pita/recording.py` (its reference) builds them; the tests hold both
// to tests/data/recording-convention.json in the pita repository.

/// The largest step number a name holds (nine digits, what `pita trace` reads).
pub(crate) const MAX_STEP: usize = 999_999_999;
const PARAM: &str = "param/";

pub(crate) fn param_name(path: &str) -> String {
    format!("{PARAM}{path}")
}

pub(crate) fn init_name(path: &str) -> String {
    format!("init/{path}")
}

pub(crate) fn grad_name(path: &str) -> String {
    format!("grad/{path}")
}

pub(crate) fn step_name(step: usize, path: &str) -> String {
    format!("step{step}/{path}")
}

pub(crate) fn loss_name(step: usize) -> String {
    format!("loss/{step}")
}

/// `act/<module>` for the first call, `act/<module>#<call>` for a later one.
pub(crate) fn act_name(module: &str, call: usize) -> String {
    match call {
        1 => format!("act/{module}"),
        n => format!("act/{module}#{n}"),
    }
}

/// `mask<step>/<module>` for the first random op inside `module` in that step's forward,
/// `mask<step>/<module>#<call>` for a later one.
#[allow(dead_code)] // read by the replay of a reference's masks
pub(crate) fn mask_name(step: usize, module: &str, call: usize) -> String {
    match call {
        1 => format!("mask{step}/{module}"),
        n => format!("mask{step}/{module}#{n}"),
    }
}

/// Refuses a step numbered 0 or beyond [`MAX_STEP`]; `what` names the call (`loss/0`).
fn check_step(what: &str, step: usize) -> Result<(), Error> {
    match step {
        0 => Err(recording(format!("{what}: steps are numbered from 1"))),
        _ if step > MAX_STEP => Err(recording(format!("{what}: steps are numbered up to {MAX_STEP} (nine digits)"))),
        _ => Ok(()),
    }
}

// burn-store's names for the module types its PyTorch adapter knows (`Struct:<type>`, from the
// Module derive). The parity test against `BurnToPyTorchAdapter` (feature `store`) checks them.
const LINEAR: &str = "Struct:Linear";
const BATCH_NORM: &str = "Struct:BatchNorm";
const NORMS: [&str; 4] = [BATCH_NORM, "Struct:LayerNorm", "Struct:GroupNorm", "Struct:RmsNorm"];

thread_local! {
    /// Whether a recorder listens on this thread: the one read a tap makes when none does.
    static LISTENING: Cell<bool> = const { Cell::new(false) };
    /// The activations recorded since the innermost live guard on this thread was made.
    static SESSION: RefCell<Option<Session>> = const { RefCell::new(None) };
}

/// Adds a held tensor to a dump (reading it from its device).
type Write = Box<dyn FnOnce(&mut Dump) -> Result<(), Error> + Send>;

/// A tensor held until [`Recorder::into_dump`] reads it: its device is not synchronised while
/// the run records.
struct Entry {
    name: String,
    dtype: DType,
    write: Write,
}

impl Entry {
    fn new<const D: usize>(name: String, tensor: Tensor<D>) -> Self {
        let dtype = tensor.dtype();
        let key = name.clone();
        Entry { name, dtype, write: Box::new(move |dump: &mut Dump| dump.tensor(&key, tensor).map(|_| ())) }
    }
}

#[derive(Default)]
struct Session {
    taps: Vec<Entry>,
    calls: HashMap<String, usize>,
}

// book:begin tap
/// Records `tensor` as `act/<name>` into the recorder listening on this thread (see
/// [`Recorder::listen`]); the second call with the same name while it listens is
/// `act/<name>#2`, the third `act/<name>#3`, and so on. The order of the calls is the
/// `execution_order` of the recording. Name it after the module whose output it is, as PyTorch
/// names it (`encoder.fc1`), and call it where that module's call ends.
///
/// Cost when no recorder listens: one thread-local read and a branch, about 0.5 ns per call on
/// a virtualised Intel Xeon core in release (under 0.1 ns more than the same loop without the
/// call), about 8 ns in debug; a 3.7 µs forward pass of a small MLP with five taps costs what
/// it costs without them, within the noise (measured by `bench/tap` in the pita repository;
/// the machine varies). When one listens: a clone of the tensor handle (no copy, no device
/// sync) and its name, about 0.2 µs; its values are read once, by [`Recorder::into_dump`].
#[inline]
pub fn tap<const D: usize>(name: &str, tensor: &Tensor<D>) {
    if LISTENING.with(Cell::get) {
        record_tap(name, tensor);
    }
}
// book:end

#[cold]
#[inline(never)]
fn record_tap<const D: usize>(name: &str, tensor: &Tensor<D>) {
    SESSION.with(|session| {
        if let Some(session) = session.borrow_mut().as_mut() {
            let calls = session.calls.entry(name.to_string()).or_insert(0);
            *calls += 1;
            session.taps.push(Entry::new(act_name(name, *calls), tensor.clone().detach()));
        }
    });
}

/// Records one training run into a [`Dump`] following docs/recording.md: [`params`](Self::params),
/// the activations [`tap`]ped while [`listen`](Self::listen)'s guard lives,
/// [`loss`](Self::loss), `grads` (feature `autodiff`), [`step`](Self::step), then
/// [`into_dump`](Self::into_dump). See the [module documentation](self) for an example and the
/// names.
///
/// Every tensor keeps its dtype. The recorder holds the tensors (handles, not copies; burn
/// tensors are immutable, so a later step does not change them) and reads them from their
/// device once, in [`into_dump`](Self::into_dump).
#[derive(Default)]
#[must_use = "a recorder records nothing until its methods are called and `into_dump` writes it"]
pub struct Recorder {
    torch_names: bool,
    entries: Vec<Entry>,
    names: HashSet<String>,
    acts: Vec<String>,
    no_grad: Vec<String>,
    listened: bool,
    steps: BTreeSet<usize>,
}

impl fmt::Debug for Recorder {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Recorder")
            .field("torch_names", &self.torch_names)
            .field("names", &self.names().collect::<Vec<_>>())
            .field("steps", &self.steps)
            .finish()
    }
}

impl Recorder {
    /// A recorder that records burn's names and layouts; see [`torch_names`](Self::torch_names).
    pub fn new() -> Self {
        Self::default()
    }

    /// With `true`, parameters and gradients are recorded under PyTorch's names and in its
    /// layouts, as burn-store's PyTorch adapter writes them (the [module documentation](self)
    /// lists what is mapped and what is not); with `false` (the default), as burn has them.
    /// Set it before recording: it applies to the calls that follow.
    pub fn torch_names(mut self, torch_names: bool) -> Self {
        self.torch_names = torch_names;
        self
    }

    /// Records each float parameter of `model` as `param/<path>`, as loaded, before the first
    /// step. Fails if the recorder holds them already.
    ///
    /// Cost: a traversal of the module and a handle per parameter; no device work.
    pub fn params<M: Module>(&mut self, model: &M) -> Result<&mut Self, Error> {
        let (entries, _) = self.collect(model, &param_name, Values);
        self.add(entries)
    }

    /// Records each float parameter of `model` as `init/<path>`: call it on the model as
    /// initialised, before the weights are loaded, so that `pita trace`'s load audit finds the
    /// parameters a load left at their initial values. Same cost as [`params`](Self::params).
    pub fn init_params<M: Module>(&mut self, model: &M) -> Result<&mut Self, Error> {
        let (entries, _) = self.collect(model, &init_name, Values);
        self.add(entries)
    }

    /// Makes [`tap`] record into this recorder, on this thread, while the returned guard lives:
    /// bind it (`let _listening = recorder.listen();`) around the first step's forward pass.
    ///
    /// Only the first guard of a recorder records: the recording holds the activations of the
    /// first forward only, so a later `listen` (a loop that listens every step) returns a guard
    /// under which taps record nothing. Guards of different recorders nest: while an inner
    /// guard lives, taps go to its recorder alone; drop guards in the reverse order of their
    /// making, as scopes do. The guard cannot leave its thread.
    pub fn listen(&mut self) -> Listening<'_> {
        let records = !self.listened;
        self.listened = true;
        let outer = SESSION.with(|session| session.replace(records.then(Session::default)));
        let outer_listening = LISTENING.with(|listening| listening.replace(records));
        Listening { recorder: self, outer, outer_listening, _thread: PhantomData }
    }

    /// Records the loss of step `step` (1, 2, …) as `loss/<step>`. Fails for a step 0 or
    /// beyond 999_999_999 (nine digits), a loss of more than one value (shape other than `[1]`),
    /// or a step recorded already.
    pub fn loss(&mut self, step: usize, loss: &Tensor<1>) -> Result<&mut Self, Error> {
        let name = loss_name(step);
        check_step(&name, step)?;
        let dims = loss.dims();
        if dims != [1] {
            return Err(recording(format!("{name}: a loss is one value, shape [1]; this one has shape {dims:?} (reduce it first)")));
        }
        let entry = Entry::new(name, loss.clone().detach());
        self.add(vec![entry])
    }

    /// Records the gradient of each parameter of `model` in `grads` as `grad/<path>` (feature
    /// `autodiff`): `grads` is what `loss.backward()` returned, before an optimizer consumes it
    /// (`GradientsParams::from_grads` takes it by value, so call this first). `model` is the
    /// autodiff model whose forward computed the loss. Parameters without a gradient (frozen,
    /// or unused by the loss) are left out, as PyTorch leaves their `.grad` at `None`, and
    /// listed (by path) in the metadata key `no_grad`, a JSON list, as `pita.torch` does. With
    /// [`torch_names`](Self::torch_names), a Linear weight's gradient is transposed as the
    /// weight is.
    ///
    /// Fails if no parameter has a gradient in `grads` (not the model, or not on an autodiff
    /// device), or if the recorder holds gradients already.
    #[cfg(feature = "autodiff")]
    pub fn grads<M: Module>(&mut self, model: &M, grads: &Gradients) -> Result<&mut Self, Error> {
        let (entries, no_grad) = self.collect(model, &grad_name, Grads(grads));
        if entries.is_empty() && !no_grad.is_empty() {
            return Err(recording(
                "grad/: no parameter of the model has a gradient in these Gradients (is it the autodiff model whose forward computed the loss?)",
            ));
        }
        self.add(entries)?;
        self.no_grad.extend(no_grad);
        Ok(self)
    }

    /// Records each float parameter of `model` after optimizer step `step` (1, 2, …) as
    /// `step<step>/<path>`. Fails for a step 0 or beyond 999_999_999 (nine digits), or a step
    /// recorded already.
    pub fn step<M: Module>(&mut self, step: usize, model: &M) -> Result<&mut Self, Error> {
        check_step(&format!("step{step}"), step)?;
        if self.steps.contains(&step) {
            return Err(recording(format!("step{step} is recorded already")));
        }
        let (entries, _) = self.collect(model, &|path| step_name(step, path), Values);
        self.add(entries)?;
        self.steps.insert(step);
        Ok(self)
    }

    /// The `act/…` names recorded so far, in the order of their taps.
    pub fn execution_order(&self) -> &[String] {
        &self.acts
    }

    /// Every name recorded so far, in the order recorded.
    pub fn names(&self) -> impl Iterator<Item = &str> {
        self.entries.iter().map(|entry| entry.name.as_str())
    }

    /// Builds the dump from `builder` (give it any provenance, and the variant to
    /// [`write`](Dump::write) it to a folder), adds every tensor recorded, in its own dtype (the
    /// first one names the backend unless the builder did), and the metadata `recording`
    /// ([`RECORDING`]), `execution_order` (a JSON list of the `act/…` names in tap order),
    /// `steps` (the number of steps recorded), `dtype` (`float32`, `float64`, …: the first
    /// parameter's, else the first float tensor's) and, when `grads` (feature `autodiff`) found
    /// a parameter without a gradient, `no_grad`.
    ///
    /// Cost: reads every tensor from its device (a sync and an O(n) copy each).
    ///
    /// Fails as [`DumpBuilder::build`] and [`Dump::tensor`] do (an activation name that cannot
    /// be printed on one line, a tap named `x#2` beside a second call of `x`), and with
    /// [`Error::ReservedKey`] if the builder holds one of [`RECORDING_KEYS`].
    pub fn into_dump(self, builder: DumpBuilder) -> Result<Dump, Error> {
        let mut dump = builder.build()?;
        if let Some(key) = RECORDING_KEYS.iter().find(|key| dump.metadata().contains_key(**key)) {
            return Err(Error::ReservedKey { key: key.to_string(), hint: "Recorder::into_dump sets it" });
        }
        let dtype = self.dtype();
        let Recorder { entries, acts, no_grad, steps, .. } = self;
        for entry in entries {
            (entry.write)(&mut dump)?;
        }
        let json = |names: &[String]| serde_json::to_string(names).map_err(|e| Error::Serialize { message: e.to_string() });
        dump.set_metadata("recording", RECORDING)?.set_metadata("execution_order", json(&acts)?)?.set_metadata("steps", steps.len())?;
        if let Some(dtype) = dtype {
            dump.set_metadata("dtype", dtype)?;
        }
        if !no_grad.is_empty() {
            dump.set_metadata("no_grad", json(&no_grad)?)?;
        }
        Ok(dump)
    }

    fn dtype(&self) -> Option<String> {
        let float = |entry: &&Entry| entry.dtype.is_float();
        let first = self.entries.iter().filter(float).find(|entry| entry.name.starts_with(PARAM));
        first.or_else(|| self.entries.iter().find(float)).map(|entry| dtype_name(entry.dtype))
    }

    /// The entries of `model`'s float parameters, named by `name` from their paths, and the
    /// paths of those `read` found nothing for.
    fn collect<M: Module, R: Read>(&self, model: &M, name: &dyn Fn(&str) -> String, read: R) -> (Vec<Entry>, Vec<String>) {
        let (path, containers, entries, unread) = (Vec::new(), Vec::new(), Vec::new(), Vec::new());
        let mut visit = Visit { torch: self.torch_names, name, read, path, containers, entries, unread };
        model.visit(&mut visit);
        (visit.entries, visit.unread)
    }

    /// Adds all of `entries` or, if one of their names is recorded already, none.
    fn add(&mut self, entries: Vec<Entry>) -> Result<&mut Self, Error> {
        let mut seen = HashSet::new();
        if let Some(entry) = entries.iter().find(|entry| self.names.contains(&entry.name) || !seen.insert(entry.name.as_str())) {
            return Err(recording(format!("{} is recorded already", entry.name)));
        }
        self.names.extend(entries.iter().map(|entry| entry.name.clone()));
        self.entries.extend(entries);
        Ok(self)
    }
}

fn recording(message: impl Into<String>) -> Error {
    Error::Recording { message: message.into() }
}

/// PyTorch's name of a float dtype (`torch.float32` → `float32`).
fn dtype_name(dtype: DType) -> String {
    match dtype {
        DType::F64 => "float64".to_string(),
        DType::F32 | DType::Flex32 => "float32".to_string(),
        DType::F16 => "float16".to_string(),
        DType::BF16 => "bfloat16".to_string(),
        other => format!("{other:?}").to_lowercase(),
    }
}

/// What [`tap`] records into while it lives; made by [`Recorder::listen`]. Dropping it stops
/// the recording and hands the activations to the recorder (and the thread back to the guard
/// it was made under, if any).
#[must_use = "taps record only while the guard lives: bind it, `let _listening = recorder.listen();`"]
pub struct Listening<'a> {
    recorder: &'a mut Recorder,
    outer: Option<Session>,
    outer_listening: bool,
    /// Not `Send`: the guard restores the thread-local state of the thread it was made on.
    _thread: PhantomData<*const ()>,
}

impl fmt::Debug for Listening<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Listening").field("recorder", &self.recorder).finish_non_exhaustive()
    }
}

impl Drop for Listening<'_> {
    fn drop(&mut self) {
        let session = SESSION.with(|session| session.replace(self.outer.take()));
        LISTENING.with(|listening| listening.set(self.outer_listening));
        if let Some(session) = session {
            let recorder = &mut *self.recorder;
            for entry in session.taps {
                recorder.acts.push(entry.name.clone());
                recorder.names.insert(entry.name.clone());
                recorder.entries.push(entry);
            }
        }
    }
}

/// How a traversal reads a parameter: its value, or its gradient.
trait Read {
    fn read<const D: usize>(&self, param: &Param<Tensor<D>>) -> Option<Tensor<D>>;
}

struct Values;

impl Read for Values {
    fn read<const D: usize>(&self, param: &Param<Tensor<D>>) -> Option<Tensor<D>> {
        Some(param.val().detach())
    }
}

#[cfg(feature = "autodiff")]
struct Grads<'g>(&'g Gradients);

#[cfg(feature = "autodiff")]
impl Read for Grads<'_> {
    fn read<const D: usize>(&self, param: &Param<Tensor<D>>) -> Option<Tensor<D>> {
        // A parameter never initialised took no part in the forward; one that does not require
        // a gradient has none (and burn-optim checks the same before asking).
        if !param.is_initialized() || !param.is_require_grad() {
            return None;
        }
        param.val().grad(self.0)
    }
}

/// burn's module traversal, keeping the path and the container types (`Struct:Linear`, `Vec`,
/// …) the way burn-store's collector does, and naming each float parameter.
struct Visit<'p, R> {
    torch: bool,
    name: &'p dyn Fn(&str) -> String,
    read: R,
    path: Vec<String>,
    containers: Vec<String>,
    entries: Vec<Entry>,
    unread: Vec<String>,
}

impl<R> Visit<'_, R> {
    fn in_path(&self, container_type: &str) -> bool {
        !(self.torch && container_type.starts_with("Enum:"))
    }
}

impl<R: Read> ModuleVisitor for Visit<'_, R> {
    fn enter_module(&mut self, name: &str, container_type: &str) {
        self.containers.push(container_type.to_string());
        if self.in_path(container_type) {
            self.path.push(name.to_string());
        }
    }

    fn exit_module(&mut self, _name: &str, container_type: &str) {
        self.containers.pop();
        if self.in_path(container_type) {
            self.path.pop();
        }
    }

    fn visit_float<const D: usize>(&mut self, param: &Param<Tensor<D>>) {
        let (field, parents) = match self.path.split_last() {
            Some((field, parents)) => (field.as_str(), parents),
            None => ("", &[][..]),
        };
        // The innermost user-defined module holding the parameter, past Vec and array wrappers.
        let module = self.containers.iter().rev().find(|c| c.starts_with("Struct:") || c.starts_with("Enum:")).map(String::as_str);
        let mut leaf = field;
        let mut transpose = false;
        if self.torch {
            match (module, field) {
                (Some(BATCH_NORM), "running_mean" | "running_var") => return,
                (Some(LINEAR), "weight") if D == 2 => transpose = true,
                (Some(norm), "gamma") if NORMS.contains(&norm) => leaf = "weight",
                (Some(norm), "beta") if NORMS.contains(&norm) => leaf = "bias",
                _ => {}
            }
        }
        let mut path = String::new();
        for part in parents {
            path.push_str(part);
            path.push('.');
        }
        path.push_str(leaf);
        match self.read.read(param) {
            Some(tensor) => {
                let tensor = if transpose { tensor.transpose() } else { tensor };
                self.entries.push(Entry::new((self.name)(&path), tensor));
            }
            None => self.unread.push(path),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use burn::module::Module;
    use burn::nn::{BatchNorm, BatchNormConfig, LayerNorm, LayerNormConfig, Linear, LinearConfig};
    use burn::tensor::{Device, TensorData};

    #[derive(Module, Debug)]
    struct Net {
        fc1: Linear,
        norm: LayerNorm,
        layers: Vec<Linear>,
    }

    impl Net {
        fn new(device: &Device) -> Self {
            Net {
                fc1: LinearConfig::new(3, 4).init(device),
                norm: LayerNormConfig::new(4).init(device),
                layers: vec![LinearConfig::new(4, 4).init(device), LinearConfig::new(4, 2).init(device)],
            }
        }

        fn forward(&self, x: Tensor<2>) -> Tensor<2> {
            let x = self.fc1.forward(x);
            tap("fc1", &x);
            let mut x = self.norm.forward(x);
            tap("norm", &x);
            for (i, layer) in self.layers.iter().enumerate() {
                x = layer.forward(x);
                tap(&format!("layers.{i}"), &x);
            }
            x
        }
    }

    fn device() -> Device {
        Device::flex().autodiff()
    }

    fn inputs(device: &Device) -> Tensor<2> {
        Tensor::<2>::from_floats([[0.5, -1.0, 2.0], [1.5, 0.25, -0.75]], device)
    }

    fn values<const D: usize>(tensor: Tensor<D>) -> Vec<f32> {
        tensor.into_data().try_to_vec::<f32>().unwrap()
    }

    fn dumped(dump: &Dump, name: &str) -> (Vec<usize>, Vec<f32>) {
        let tensor = dump.get(name).unwrap_or_else(|| panic!("no {name}"));
        let floats = tensor.bytes().chunks(4).map(|b| f32::from_le_bytes(b.try_into().unwrap())).collect();
        (tensor.shape().to_vec(), floats)
    }

    fn dump_of(recorder: Recorder) -> Dump {
        recorder.into_dump(Dump::builder().variant("record")).unwrap()
    }

    #[test]
    fn params_have_torch_names_and_layouts() {
        let model = Net::new(&device());
        let mut recorder = Recorder::new().torch_names(true);
        recorder.params(&model).unwrap();
        let names: Vec<&str> = recorder.names().collect();
        assert_eq!(
            names,
            [
                "param/fc1.weight",
                "param/fc1.bias",
                "param/norm.weight",
                "param/norm.bias",
                "param/layers.0.weight",
                "param/layers.0.bias",
                "param/layers.1.weight",
                "param/layers.1.bias"
            ]
        );
        let dump = dump_of(recorder);
        let (shape, weight) = dumped(&dump, "param/fc1.weight");
        assert_eq!(shape, [4, 3]);
        assert_eq!(weight, values(model.fc1.weight.val().transpose()));
        assert_eq!(dumped(&dump, "param/layers.1.weight").0, [2, 4]);
        assert_eq!(dumped(&dump, "param/norm.weight").1, values(model.norm.gamma.val()));
        assert_eq!(dump.metadata()["backend"], "Autodiff<Flex>");
        assert_eq!(dump.metadata()["dtype"], "float32");
    }

    #[test]
    fn params_keep_burn_names_by_default() {
        let model = Net::new(&device());
        let mut recorder = Recorder::new();
        recorder.params(&model).unwrap().init_params(&model).unwrap();
        {
            let _listening = recorder.listen();
            model.forward(inputs(&device()));
        }
        assert_eq!(recorder.execution_order(), ["act/fc1", "act/norm", "act/layers.0", "act/layers.1"]);
        let dump = dump_of(recorder);
        assert_eq!(dumped(&dump, "param/fc1.weight").0, [3, 4]);
        assert_eq!(dumped(&dump, "param/fc1.weight").1, values(model.fc1.weight.val()));
        assert!(dump.get("param/norm.gamma").is_some() && dump.get("param/norm.beta").is_some());
        assert!(dump.get("init/layers.0.bias").is_some());
    }

    #[derive(Module, Debug)]
    enum Head {
        Dense(Linear),
    }

    #[derive(Module, Debug)]
    struct Conv {
        bn: BatchNorm,
        head: Head,
    }

    #[test]
    fn torch_names_leave_out_buffers_and_enum_variants() {
        let device = device();
        let model = Conv { bn: BatchNormConfig::new(2).init(&device), head: Head::Dense(LinearConfig::new(2, 3).init(&device)) };
        let mut torch = Recorder::new().torch_names(true);
        torch.params(&model).unwrap();
        let names: Vec<&str> = torch.names().collect();
        assert_eq!(names, ["param/bn.weight", "param/bn.bias", "param/head.weight", "param/head.bias"]);
        let mut burn = Recorder::new();
        burn.params(&model).unwrap();
        let names: Vec<&str> = burn.names().collect();
        let want = ["gamma", "beta", "running_mean", "running_var"].map(|n| format!("param/bn.{n}"));
        assert_eq!(names[..4], want);
        assert_eq!(names[4..], ["param/head.Dense.weight", "param/head.Dense.bias"]);
    }

    #[test]
    fn float64_parameters_name_the_dtype() {
        #[derive(Module, Debug)]
        struct One {
            w: Param<Tensor<1>>,
        }
        let w = Tensor::<1>::from_data(TensorData::new(vec![0.1f64, 0.2], [2]), (&device(), DType::F64));
        let mut recorder = Recorder::new();
        recorder.params(&One { w: Param::from_tensor(w) }).unwrap();
        let dump = dump_of(recorder);
        assert_eq!((dump.metadata()["dtype"].as_str(), dump.get("param/w").unwrap().dtype()), ("float64", "F64"));
    }

    /// One whole step: taps in execution order, the loss, the gradients (transposed like their
    /// weights), a step of burn's SGD, and the metadata.
    #[cfg(feature = "autodiff")]
    #[test]
    fn records_a_training_step() {
        use burn::optim::{GradientsParams, SgdConfig};
        let device = device();
        let mut model = Net::new(&device);
        let mut recorder = Recorder::new().torch_names(true);
        recorder.params(&model).unwrap();
        let loss = {
            let _listening = recorder.listen();
            model.forward(inputs(&device)).powi_scalar(2).mean()
        };
        recorder.loss(1, &loss).unwrap();
        let grads = loss.backward();
        recorder.grads(&model, &grads).unwrap();
        let fc1_grad = model.fc1.weight.val().grad(&grads).unwrap();
        let before = values(model.fc1.weight.val());
        let fc1_out = values(model.fc1.forward(inputs(&device)));
        let mut optimizer = SgdConfig::new().init();
        let grads = GradientsParams::from_grads(grads, &model);
        model = optimizer.step(0.5, model, grads);
        recorder.step(1, &model).unwrap();
        assert_eq!(recorder.execution_order(), ["act/fc1", "act/norm", "act/layers.0", "act/layers.1"]);

        let dump = dump_of(recorder);
        let meta = dump.metadata();
        assert_eq!(meta["recording"], RECORDING);
        assert_eq!(meta["execution_order"], r#"["act/fc1","act/norm","act/layers.0","act/layers.1"]"#);
        assert_eq!((meta["steps"].as_str(), meta["dtype"].as_str()), ("1", "float32"));
        assert_eq!(dumped(&dump, "loss/1").0, [1]);
        assert_eq!(dumped(&dump, "act/layers.1").0, [2, 2]);
        assert_eq!(dumped(&dump, "act/fc1").1, fc1_out);
        let (shape, grad) = dumped(&dump, "grad/fc1.weight");
        assert_eq!(shape, [4, 3]);
        assert_eq!(grad, values(fc1_grad.transpose()));
        for name in ["grad/fc1.bias", "grad/norm.weight", "grad/norm.bias", "grad/layers.0.weight", "grad/layers.1.bias"] {
            assert!(dump.get(name).is_some(), "no {name}");
        }
        // The recorded parameters are those before the step; step1 those after it.
        let (_, param) = dumped(&dump, "param/fc1.weight");
        let (_, stepped) = dumped(&dump, "step1/fc1.weight");
        assert_eq!(param, values(Tensor::<2>::from_data(TensorData::new(before, [3, 4]), &Device::flex()).transpose()));
        assert_eq!(stepped, values(model.fc1.weight.val().transpose()));
        assert_ne!(param, stepped);
    }

    #[test]
    fn repeated_taps_are_numbered_in_order() {
        let device = device();
        let x = Tensor::<1>::from_floats([1.0, 2.0], &device);
        let mut recorder = Recorder::new();
        {
            let _listening = recorder.listen();
            tap("block", &x);
            tap("head", &(x.clone() * 2.0));
            tap("block", &(x.clone() + 1.0));
            tap("block", &x);
        }
        assert_eq!(recorder.execution_order(), ["act/block", "act/head", "act/block#2", "act/block#3"]);
        let dump = dump_of(recorder);
        assert_eq!(dumped(&dump, "act/block#2").1, [2.0, 3.0]);
        assert_eq!(dumped(&dump, "act/head").1, [2.0, 4.0]);
    }

    #[test]
    fn taps_record_only_while_the_first_guard_lives() {
        let x = Tensor::<1>::from_floats([1.0], &device());
        let mut recorder = Recorder::new();
        tap("before", &x); // nobody listens: a no-op
        {
            let _listening = recorder.listen();
            tap("during", &x);
        }
        tap("after", &x); // the guard was dropped
        {
            let _again = recorder.listen(); // a second listen records nothing
            tap("second", &x);
        }
        assert_eq!(recorder.execution_order(), ["act/during"]);
        assert!(!LISTENING.with(Cell::get));
        assert_eq!(dump_of(recorder).len(), 1);
    }

    #[test]
    fn guards_nest() {
        let x = Tensor::<1>::from_floats([1.0], &device());
        let (mut outer, mut inner) = (Recorder::new(), Recorder::new());
        {
            let _outer = outer.listen();
            tap("a", &x);
            {
                let _inner = inner.listen();
                tap("b", &x);
            }
            tap("c", &x);
        }
        assert_eq!(outer.execution_order(), ["act/a", "act/c"]);
        assert_eq!(inner.execution_order(), ["act/b"]);
    }

    #[test]
    fn refuses_what_breaks_the_convention() {
        let device = device();
        let model = Net::new(&device);
        let mut recorder = Recorder::new();
        recorder.params(&model).unwrap();
        assert!(matches!(recorder.params(&model), Err(Error::Recording { .. })));
        let loss = Tensor::<1>::from_floats([1.0, 2.0], &device);
        let error = recorder.loss(1, &loss).unwrap_err();
        assert_eq!(error.to_string(), "loss/1: a loss is one value, shape [1]; this one has shape [2] (reduce it first)");
        assert!(recorder.loss(0, &loss.clone().sum()).is_err());
        recorder.loss(1, &loss.clone().sum()).unwrap();
        assert!(recorder.loss(1, &loss.sum()).is_err());
        assert!(recorder.step(0, &model).is_err());
        recorder.step(1, &model).unwrap();
        assert!(recorder.step(1, &model).is_err_and(|e| e.to_string() == "step1 is recorded already"));
        let taken = recorder.into_dump(Dump::builder().variant("v").metadata("steps", 3));
        assert!(matches!(taken, Err(Error::ReservedKey { ref key, .. }) if key == "steps"));
    }

    #[cfg(feature = "autodiff")]
    #[test]
    fn grads_of_another_model_are_refused() {
        let device = device();
        let (model, other) = (Net::new(&device), Net::new(&device));
        let grads = model.forward(inputs(&device)).sum().backward();
        let mut recorder = Recorder::new();
        assert!(matches!(recorder.grads(&other, &grads), Err(Error::Recording { .. })));
        recorder.grads(&model, &grads).unwrap();
        assert!(recorder.grads(&model, &grads).is_err(), "gradients recorded twice");
    }

    #[cfg(feature = "autodiff")]
    #[test]
    fn parameters_without_a_gradient_are_listed() {
        #[derive(Module, Debug)]
        struct Partly {
            used: Linear,
            idle: Linear,
        }
        let device = device();
        let model = Partly { used: LinearConfig::new(3, 2).init(&device), idle: LinearConfig::new(2, 2).init(&device) };
        let mut recorder = Recorder::new().torch_names(true);
        recorder.params(&model).unwrap();
        let grads = model.used.forward(inputs(&device)).sum().backward();
        recorder.grads(&model, &grads).unwrap();
        let dump = dump_of(recorder);
        assert!(dump.get("grad/used.weight").is_some() && dump.get("grad/idle.weight").is_none());
        assert_eq!(dump.metadata()["no_grad"], r#"["idle.weight","idle.bias"]"#);
        assert_eq!(dump.metadata()["steps"], "0");
    }

    /// The names, shapes and values are those burn-store's collector writes: as burn has them,
    /// and through `BurnToPyTorchAdapter` (less BatchNorm's running statistics).
    #[cfg(feature = "store")]
    #[test]
    fn matches_burn_stores_pytorch_adapter() {
        use burn::store::{BurnToPyTorchAdapter, ModuleSnapshot};
        #[derive(Module, Debug)]
        struct Both {
            net: Net,
            conv: Conv,
        }
        let device = device();
        let model = Both {
            net: Net::new(&device),
            conv: Conv { bn: BatchNormConfig::new(2).init(&device), head: Head::Dense(LinearConfig::new(2, 3).init(&device)) },
        };
        for torch in [false, true] {
            let adapter: Option<Box<dyn burn::store::ModuleAdapter>> = torch.then(|| Box::new(BurnToPyTorchAdapter) as _);
            let stored = model.collect(None, adapter, torch);
            let mut recorder = Recorder::new().torch_names(torch);
            recorder.params(&model).unwrap();
            let dump = dump_of(recorder);
            let mut compared = 0;
            for tensor in stored {
                let name = format!("param/{}", tensor.name);
                if torch && tensor.name.contains(".running_") {
                    assert!(dump.get(&name).is_none(), "{name}");
                    continue;
                }
                let ours = dump.get(&name).unwrap_or_else(|| panic!("torch {torch}: no {name}"));
                assert_eq!(ours.shape(), tensor.shape.to_vec(), "{name}");
                assert_eq!(ours.bytes(), &tensor.to_bytes().unwrap()[..], "{name}");
                compared += 1;
            }
            assert_eq!(compared, dump.len(), "torch {torch}");
        }
    }
}

/// The convention as data, tests/data/recording-convention.json in the pita repository, which
/// `pita/recording.py`'s tests read too: the names this recorder builds and the keys it refuses.
#[cfg(test)]
mod convention {
    use super::*;
    use burn::nn::LinearConfig;
    use burn::tensor::Device;
    use serde_json::Value;
    use std::path::Path;

    /// The fixture; None only in a packaged crate, which holds nothing outside the crate.
    fn fixture() -> Option<Value> {
        let crate_dir = Path::new(env!("CARGO_MANIFEST_DIR"));
        let path = crate_dir.join("../../tests/data/recording-convention.json");
        match std::fs::read_to_string(&path) {
            Ok(text) => Some(serde_json::from_str(&text).expect("the fixture is JSON")),
            Err(_) if crate_dir.join("Cargo.toml.orig").exists() => None,
            Err(error) => panic!("{}: {error}", path.display()),
        }
    }

    fn strings(value: &Value) -> Vec<&str> {
        value.as_array().expect("a list").iter().map(|v| v.as_str().expect("a string")).collect()
    }

    /// A builder call of the fixture, `["step_name", 1, "fc.weight"]`: its name and arguments.
    struct Call<'a>(&'a [Value]);

    impl Call<'_> {
        fn builder(&self) -> &str {
            self.0[0].as_str().expect("a builder's name")
        }
        fn text(&self, i: usize) -> &str {
            self.0[i].as_str().expect("a string argument")
        }
        fn number(&self, i: usize) -> usize {
            self.0[i].as_u64().expect("a number argument") as usize
        }
    }

    #[test]
    fn builds_the_names_of_the_convention() {
        let Some(convention) = fixture() else { return };
        assert_eq!(convention["recording"], RECORDING);
        assert_eq!(convention["max_number"], MAX_STEP);
        let mut built = 0;
        for example in convention["names"].as_array().expect("names") {
            let Some(build) = example.get("build") else { continue };
            let call = Call(build.as_array().expect("a builder call"));
            let name = match call.builder() {
                "param_name" => param_name(call.text(1)),
                "init_name" => init_name(call.text(1)),
                "grad_name" => grad_name(call.text(1)),
                "act_name" => act_name(call.text(1), call.number(2)),
                "loss_name" => loss_name(call.number(1)),
                "step_name" => step_name(call.number(1), call.text(2)),
                "mask_name" => mask_name(call.number(1), call.text(2), call.number(3)),
                "optim_name" => continue, // burn's recorder records no optimizer state
                other => panic!("a builder the recorder lacks: {other}"),
            };
            assert_eq!(name, example["name"].as_str().expect("a name"));
            built += 1;
        }
        assert!(built >= 10, "{built} names built");
    }

    #[test]
    fn refuses_the_step_numbers_the_convention_cannot_hold() {
        let Some(convention) = fixture() else { return };
        let device = Device::flex();
        let model = LinearConfig::new(1, 1).init(&device);
        let loss = Tensor::<1>::from_floats([0.5], &device);
        let mut refused = 0;
        for call in convention["refused"].as_array().expect("refused calls") {
            let call = Call(call.as_array().expect("a builder call"));
            let mut recorder = Recorder::new();
            let result = match call.builder() {
                "loss_name" => recorder.loss(call.number(1), &loss).map(|_| ()),
                "step_name" => recorder.step(call.number(1), &model).map(|_| ()),
                _ => continue, // taps number their calls; no optimizer state
            };
            assert!(matches!(result, Err(Error::Recording { .. })), "{:?}", call.0);
            refused += 1;
        }
        assert!(refused >= 4, "{refused} refusals checked");
        Recorder::new().loss(MAX_STEP, &loss).unwrap().step(MAX_STEP, &model).unwrap();
    }

    #[test]
    fn refuses_the_reserved_metadata_keys() {
        let Some(convention) = fixture() else { return };
        let metadata = &convention["metadata"];
        assert_eq!(strings(&metadata["recorder"]), RECORDING_KEYS);
        for key in strings(&metadata["recorder"]).into_iter().chain(strings(&metadata["provenance"])) {
            let taken = Recorder::new().into_dump(Dump::builder().metadata(key, "x"));
            assert!(matches!(taken, Err(Error::ReservedKey { key: ref refused, .. }) if refused == key), "{key}");
        }
        for key in strings(&metadata["user"]) {
            let dump = Recorder::new().into_dump(Dump::builder().metadata(key, "x")).unwrap();
            assert_eq!(dump.metadata()[key], "x");
        }
    }
}
