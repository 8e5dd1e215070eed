//! Recording a training run for `pita trace` (docs/recording.md in the pita repository): the
//! parameters, the activations of the first forward pass in execution order, the loss, the
//! gradients, the parameters and buffers after each optimizer step, and the optimizer's
//! settings, in one [`Dump`] whose names follow the recording convention (`param/…`, `act/…`,
//! `loss/<k>`, `grad/…`, `step<k>/…`).
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
//!         pita::tap!("norm", &x); // the same; a name with {arguments} is formatted only when one listens
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
//! recorder.step(1, &model)?;                            // step1/fc1.weight, … (and buffers)
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
//! float tensors are recorded (int and bool tensors are not parameters in PyTorch). Buffers
//! (BatchNorm's `running_mean` and `running_var`, burn's only ones) are not parameters: they are
//! recorded after each step only (`step<k>/bn.running_mean`), never under `param/`, `init/` or
//! `grad/`, as PyTorch's `named_parameters()` holds none.
//!
//! With [`torch_names(true)`](Recorder::torch_names), names and layouts are PyTorch's, by the
//! module types holding the tensor. As burn-store's `BurnToPyTorchAdapter` writes them:
//!
//! - `Linear`: `weight` is written transposed, `[out, in]` (burn keeps `[in, out]`); its
//!   gradient too. [`transpose_linears(false)`](Recorder::transpose_linears) keeps burn's
//!   layout, for weights PyTorch stores `[in, out]` (transformers' `Conv1D`, GPT-2's) and the
//!   port loads without the adapter;
//! - `LayerNorm`, `BatchNorm`, `GroupNorm`, `RmsNorm`: `gamma` → `weight`, `beta` → `bias`.
//!
//! Beyond the adapter, so that the names are `named_parameters()`'s:
//!
//! - enum variant names are left out of the paths (PyTorch has no enum modules);
//! - `Gru` (nn.GRU, one layer): the gates' Linears are packed as PyTorch packs them,
//!   `weight_ih_l0` = the reset, update and new gates' `input_transform` weights, each `[out,
//!   in]`, stacked along axis 0 (PyTorch's row blocks `[r | z | n]`); `weight_hh_l0` the same of
//!   the `hidden_transform`s; `bias_ih_l0`, `bias_hh_l0` their biases;
//! - `Lstm` (nn.LSTM, one layer): the same with the blocks `[i | f | g | o]` (input, forget,
//!   cell, output gates);
//! - `BiGru`, `BiLstm` (a bidirectional nn.GRU/nn.LSTM): `forward` as above, `reverse` with the
//!   suffix `_reverse` (`weight_ih_l0_reverse`);
//! - `MultiHeadAttention` (nn.MultiheadAttention): `in_proj_weight` = the `query`, `key`, `value`
//!   weights, each `[out, in]`, stacked along axis 0; `in_proj_bias` their biases; `output` is
//!   `out_proj`;
//! - `TransformerEncoderLayer` (nn.TransformerEncoderLayer): `mha` is `self_attn`,
//!   `pwff.linear_inner` `linear1`, `pwff.linear_outer` `linear2`, `norm_1` `norm1`, `norm_2`
//!   `norm2`: the post-norm layer's (`norm_first` false, PyTorch's default). burn's pre-norm
//!   layer applies `norm_2` before the attention, where PyTorch's applies `norm1`, and the
//!   traversal cannot see `norm_first`: say so with [`norm_first(true)`](Recorder::norm_first)
//!   (`norm_2` → `norm1`, `norm_1` → `norm2`).
//!
//! A packed tensor's gradient and its values after a step are packed the same way. A pack that
//! lacks a block (Linears without bias: no bias is written; an Lstm with a coupled forget gate;
//! MultiHeadAttention with a bias on some of q, k, v only) is written block by block under
//! burn's paths. Not mapped: `InstanceNorm`'s `gamma`/`beta` (PyTorch: `weight`/`bias`),
//! `PRelu`'s `alpha` (PyTorch: `weight`), a stack of recurrent layers (PyTorch's `_l1`, …, are
//! one module), burn's `TransformerDecoder`, and any field named differently from the PyTorch
//! attribute: [`torch_names_from`](Recorder::torch_names_from) reuses the renames the port
//! loaded PyTorch's weights with, a rules file (`pita trace --rules`) renames what remains.
//! Values are the ones the forward pass uses (`Param::val`), so a `Linear` stored in burn's
//! `LinearLayout::Col` is written `[out, in]` as well.
//!
//! [`prefix`](Recorder::prefix) prepends a path to every name (`bert.`), the taps' included.
//!
//! # Settings
//!
//! [`params`](Recorder::params) also writes the metadata key `modules`, which `pita trace`
//! compares with PyTorch's module settings before any tensor: each module's kind (burn's type
//! name: `LayerNorm`, `Conv2d`, `BatchNorm`, `Dropout`, `Gelu`, `MultiHeadAttention`, `Gru`, …)
//! and its settings in burn's names, read from burn's `ModuleDisplay`: its fields that are
//! neither modules nor parameters (`epsilon`, `prob`, `padding`, `dilation`, `groups`,
//! `momentum`, …), what burn's display adds (`d_model`, `d_input`, …) and `bias` (whether its
//! bias parameter is present). A module is recorded under the path its parameters are, less
//! their leaf; one without a parameter of its own (Dropout, Gelu, Relu) under its field path,
//! named by the same rules. Containers (`Vec`, tuples, enum variants), modules of the port's own
//! without a setting of their own, and the inner modules of those PyTorch implements as one (Gru
//! and Lstm gates, MultiHeadAttention's `query`, `key`, `value`) are not recorded.
//! [`loss_fn`](Recorder::loss_fn) writes the loss module's settings (`loss_fn`) the same way.

use std::cell::{Cell, RefCell};
use std::collections::{BTreeSet, HashMap, HashSet};
use std::fmt;
use std::marker::PhantomData;

use burn::config::Config;
use burn::module::{Module, ModuleDisplay};
#[cfg(feature = "autodiff")]
use burn::tensor::Gradients;
use burn::nn::loss::Reduction;
use burn::tensor::{DType, Tensor};

use crate::dump::{Dump, DumpBuilder};
use crate::Error;

mod naming;
mod settings;
mod visit;

pub use naming::safetensors_names;
use naming::Renames;
use visit::{Found, Names, Read, Select, Values, Visit};

/// The `recording` metadata key's value: the dump follows docs/recording.md.
pub const RECORDING: &str = "pita-record/1";

/// The metadata keys a recorder sets (docs/recording.md): [`Recorder::into_dump`]'s, `no_grad`,
/// `buffers`, `optimizer`, `masks_replayed`, `modules` and `loss_fn` only when there is something to say, and those
/// only `pita.torch` writes (`densified`, `reference64`); a builder that already holds one is
/// refused.
pub const RECORDING_KEYS: [&str; 12] = [
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
    "modules",
    "loss_fn",
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

#[cfg_attr(not(feature = "autodiff"), allow(dead_code))] // `Recorder::grads` needs autodiff
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
    /// The recorder's [`prefix`](Recorder::prefix).
    prefix: String,
}

/// Whether a recorder listens on this thread, so that a [`tap`] would record: what [`tap!`](crate::tap!)
/// asks before it formats a name. Cost: one thread-local read.
#[inline]
pub fn listening() -> bool {
    LISTENING.with(Cell::get)
}

// book:begin tap
/// Records `tensor` as `act/<name>` into the recorder listening on this thread (see
/// [`Recorder::listen`]); the second call with the same name while it listens is
/// `act/<name>#2`, the third `act/<name>#3`, and so on. The order of the calls is the
/// `execution_order` of the recording. Name it after the module whose output it is, as PyTorch
/// names it (`encoder.fc1`), and call it where that module's call ends. A name built at run
/// time (`layers.{i}`): [`tap!`](crate::tap!) formats it only when a recorder listens.
///
/// Cost when no recorder listens: one thread-local read and a branch, about 0.5 ns per call on
/// a virtualised Intel Xeon core in release (under 0.1 ns more than the same loop without the
/// call), about 8 ns in debug; a 3.7 µs forward pass of a small MLP with five taps costs what
/// it costs without them, within the noise (measured by `bench/tap` in the pita repository;
/// the machine varies). When one listens: a clone of the tensor handle (no copy, no device
/// sync) and its name, about 0.2 µs; its values are read once, by [`Recorder::into_dump`].
#[inline]
pub fn tap<const D: usize>(name: &str, tensor: &Tensor<D>) {
    if listening() {
        record_tap(name, tensor);
    }
}
// book:end

/// [`tap`] with a name built by [`format!`]: `pita::tap!("layers.{i}.attn", &x)`. The name is
/// formatted, and the tensor expression evaluated, only when a recorder listens on this thread
/// ([`listening`]), so a tap costs one thread-local read otherwise, name included.
///
/// To keep pita out of a port's normal build, make it an optional dependency and tap through a
/// macro of the port's own that expands to nothing without it:
///
/// ```rust
/// // In the port's Cargo.toml:
/// //   [dependencies]
/// //   pita = { path = "…", optional = true }
/// //   [features]
/// //   record = ["dep:pita"]
/// #[cfg(feature = "record")]
/// macro_rules! tap {
///     ($($tap:tt)*) => { pita::tap!($($tap)*) };
/// }
/// #[cfg(not(feature = "record"))]
/// macro_rules! tap {
///     ($($tap:tt)*) => {};
/// }
///
/// # macro_rules! tap_recorded { ($($tap:tt)*) => { pita::tap!($($tap)*) }; }
/// fn forward(x: burn::tensor::Tensor<2>, i: usize) -> burn::tensor::Tensor<2> {
///     tap!("layers.{i}.attn", &x); // nothing without the feature `record`
///     # tap_recorded!("layers.{i}.attn", &x); // what it expands to with it
///     x
/// }
/// # let x = burn::tensor::Tensor::<2>::ones([1, 2], &burn::tensor::Device::flex());
/// # let mut recorder = pita::record::Recorder::new();
/// # { let _listening = recorder.listen(); forward(x, 3); }
/// # assert_eq!(recorder.execution_order(), ["act/layers.3.attn"]);
/// ```
#[macro_export]
macro_rules! tap {
    ($name:literal, $tensor:expr $(,)?) => {
        if $crate::record::listening() {
            $crate::record::tap(&::std::format!($name), $tensor);
        }
    };
}

#[cold]
#[inline(never)]
fn record_tap<const D: usize>(name: &str, tensor: &Tensor<D>) {
    SESSION.with(|session| {
        if let Some(session) = session.borrow_mut().as_mut() {
            let calls = session.calls.entry(name.to_string()).or_insert(0);
            *calls += 1;
            let name = act_name(&format!("{}{name}", session.prefix), *calls);
            session.taps.push(Entry::new(name, tensor.clone().detach()));
        }
    });
}

/// Records one training run into a [`Dump`] following docs/recording.md: [`params`](Self::params),
/// the activations [`tap`]ped while [`listen`](Self::listen)'s guard lives,
/// [`loss`](Self::loss), `grads` (feature `autodiff`), [`optimizer`](Self::optimizer),
/// [`step`](Self::step), then [`into_dump`](Self::into_dump). See the [module
/// documentation](self) for an example and the names.
///
/// Every tensor keeps its dtype. The recorder holds the tensors (handles, not copies; burn
/// tensors are immutable, so a later step does not change them) and reads them from their
/// device once, in [`into_dump`](Self::into_dump).
#[must_use = "a recorder records nothing until its methods are called and `into_dump` writes it"]
pub struct Recorder {
    naming: Names,
    entries: Vec<Entry>,
    recorded: HashSet<String>,
    acts: Vec<String>,
    no_grad: Vec<String>,
    buffers: Vec<String>,
    optimizer: Option<String>,
    /// The model's module settings, from [`Recorder::params`].
    modules: Option<String>,
    loss_fn: Option<String>,
    listened: bool,
    steps: BTreeSet<usize>,
    /// This thread's count of replayed masks when the recorder was made.
    masks_before: usize,
}

impl Default for Recorder {
    fn default() -> Self {
        Recorder {
            naming: Names::default(),
            entries: Vec::new(),
            recorded: HashSet::new(),
            acts: Vec::new(),
            no_grad: Vec::new(),
            buffers: Vec::new(),
            optimizer: None,
            modules: None,
            loss_fn: None,
            listened: false,
            steps: BTreeSet::new(),
            masks_before: crate::replay::replayed_masks(),
        }
    }
}

impl fmt::Debug for Recorder {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Recorder")
            .field("torch_names", &self.naming.torch)
            .field("transpose_linears", &!self.naming.keep_linear_layout)
            .field("norm_first", &self.naming.norm_first)
            .field("prefix", &self.naming.prefix)
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

    /// With `true`, tensors are recorded under PyTorch's names and in its layouts (the [module
    /// documentation](self) lists what is mapped and what is not); with `false` (the default),
    /// as burn has them. Set it before recording: it applies to the calls that follow.
    pub fn torch_names(mut self, torch_names: bool) -> Self {
        self.naming.torch = torch_names;
        self
    }

    /// With `false`, [`torch_names`](Self::torch_names) keeps PyTorch's names but records each
    /// Linear weight in burn's `[in, out]` layout, as it is held (and its gradient, its values
    /// after each step and its `init/` value): for weights loaded without burn-store's
    /// `PyTorchToBurnAdapter`, because PyTorch stored them `[in, out]` already, as transformers'
    /// `Conv1D` does (GPT-2). The default, `true`, writes them transposed, `[out, in]`, as
    /// `nn.Linear` stores them. The blocks of a tensor PyTorch packs (GRU, LSTM,
    /// MultiHeadAttention) keep PyTorch's layout: those modules store `[out, in]`. Without
    /// `torch_names` nothing is transposed either way.
    pub fn transpose_linears(mut self, transpose_linears: bool) -> Self {
        self.naming.keep_linear_layout = !transpose_linears;
        self
    }

    /// With `true`, the model's `TransformerEncoderLayer`s are pre-norm
    /// (`TransformerEncoderConfig::with_norm_first(true)`): burn applies `norm_2` before the
    /// attention, where PyTorch's pre-norm layer applies `norm1`, so with
    /// [`torch_names`](Self::torch_names) burn's `norm_2` is recorded as `norm1` and `norm_1` as
    /// `norm2` (as `pita::tapped` names their outputs). The default, `false`, is the post-norm
    /// layer's mapping (`norm_1` → `norm1`). The module traversal cannot see `norm_first`,
    /// hence this setting; it applies to every encoder layer of the model.
    pub fn norm_first(mut self, norm_first: bool) -> Self {
        self.naming.norm_first = norm_first;
        self
    }

    /// PyTorch's names, as [`torch_names(true)`](Self::torch_names), and for each tensor loaded
    /// from PyTorch's weights, the very name it was loaded from: the port's loading renames are
    /// turned around. `pytorch_names` are the names the load read (the keys of the weights file:
    /// [`safetensors_names`]); `renames` are the (regex, replacement) pairs the port gave
    /// burn-store's `KeyRemapper` (`SafetensorsStore::with_key_remapping`), applied in order to
    /// each name as burn-store applies them, which gives the burn path it was loaded into. A
    /// burn path no name reaches keeps its PyTorch name and layout as `torch_names(true)` writes
    /// it; taps are named by the port and not renamed. Set it before recording.
    ///
    /// Fails if a pattern is not a regular expression, or if two names become the same burn path.
    pub fn torch_names_from<I>(self, pytorch_names: I, renames: &[(&str, &str)]) -> Result<Self, Error>
    where
        I: IntoIterator,
        I::Item: Into<String>,
    {
        let renames = Renames::compile(renames)?;
        self.with_renames(pytorch_names, &renames)
    }

    /// [`torch_names_from`](Self::torch_names_from) with the `KeyRemapper` the port loaded
    /// PyTorch's weights with (feature `store`). Fails if two names become the same burn path.
    #[cfg(feature = "store")]
    pub fn torch_names_from_remapper<I>(self, pytorch_names: I, remapper: &burn::store::KeyRemapper) -> Result<Self, Error>
    where
        I: IntoIterator,
        I::Item: Into<String>,
    {
        self.with_renames(pytorch_names, &remapper.patterns)
    }

    fn with_renames<I>(mut self, pytorch_names: I, renames: &[(regex::Regex, String)]) -> Result<Self, Error>
    where
        I: IntoIterator,
        I::Item: Into<String>,
    {
        self.naming.renames = Renames::new(pytorch_names.into_iter().map(Into::into), renames)?;
        self.naming.torch = true;
        Ok(self)
    }

    /// Prepends `prefix` to the path of everything recorded from now on: parameters, taps,
    /// gradients, steps, buffers (`prefix("bert.")` records `param/bert.embeddings.…` and
    /// `act/bert.encoder`), for a PyTorch model that holds the ported one under an attribute.
    /// It applies after every other naming, to names found by
    /// [`torch_names_from`](Self::torch_names_from) as well.
    pub fn prefix(mut self, prefix: impl Into<String>) -> Self {
        self.naming.prefix = prefix.into();
        self
    }

    /// Records each float parameter of `model` as `param/<path>`, as loaded, before the first
    /// step, and the settings of its modules as the metadata key `modules`, which `pita trace`
    /// compares with PyTorch's before any tensor: `{"<module path>": {"kind": "LayerNorm",
    /// "settings": {"epsilon": 1e-12, …}}}` in burn's names (the [module documentation](self)
    /// says which modules and settings). Fails if the recorder holds them already.
    ///
    /// Cost: a traversal of the module, a handle per parameter and two formattings of burn's
    /// display of the model; no device work (a packed tensor's concatenation is queued, as burn
    /// queues operations).
    pub fn params<M: Module + ModuleDisplay>(&mut self, model: &M) -> Result<&mut Self, Error> {
        let found = self.collect(model, &param_name, Values, Select::Parameters);
        self.add(found.entries)?;
        self.modules = Some(serde_json::Value::Object(settings::modules(model, &self.naming)).to_string());
        Ok(self)
    }

    /// Records each float parameter of `model` as `init/<path>`: call it on the model as
    /// initialised, before the weights are loaded, so that `pita trace`'s load audit finds the
    /// parameters a load left at their initial values. Same cost as [`params`](Self::params).
    pub fn init_params<M: Module>(&mut self, model: &M) -> Result<&mut Self, Error> {
        let found = self.collect(model, &init_name, Values, Select::Parameters);
        self.add(found.entries)
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
        let session = records.then(|| Session { prefix: self.naming.prefix.clone(), ..Session::default() });
        let outer = SESSION.with(|current| current.replace(session));
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
    /// [`torch_names`](Self::torch_names), a gradient has its parameter's name and layout (a
    /// Linear weight's is transposed, a packed tensor's is packed).
    ///
    /// Fails if no parameter has a gradient in `grads` (not the model, or not on an autodiff
    /// device), or if the recorder holds gradients already.
    #[cfg(feature = "autodiff")]
    pub fn grads<M: Module>(&mut self, model: &M, grads: &Gradients) -> Result<&mut Self, Error> {
        let found = self.collect(model, &grad_name, visit::Grads(grads), Select::Parameters);
        if found.entries.is_empty() && !found.unread.is_empty() {
            return Err(recording(
                "grad/: no parameter of the model has a gradient in these Gradients (is it the autodiff model whose forward computed the loss?)",
            ));
        }
        self.add(found.entries)?;
        self.no_grad.extend(found.unread);
        Ok(self)
    }

    /// Records each float parameter of `model` after optimizer step `step` (1, 2, …) as
    /// `step<step>/<path>`, and each buffer (BatchNorm's `running_mean` and `running_var`) as
    /// it stands after that step's forward, listing their paths in the metadata key `buffers`.
    /// Fails for a step 0 or beyond 999_999_999 (nine digits), or a step recorded already.
    ///
    /// burn keeps the running statistics a forward computed pending on its thread until the next
    /// forward reads them; reading the buffers settles them (`Module::valid`), which changes
    /// nothing the next forward computes.
    pub fn step<M: Module>(&mut self, step: usize, model: &M) -> Result<&mut Self, Error> {
        check_step(&format!("step{step}"), step)?;
        if self.steps.contains(&step) {
            return Err(recording(format!("step{step} is recorded already")));
        }
        let name = |path: &str| step_name(step, path);
        let Found { mut entries, buffers, .. } = self.collect(model, &name, Values, Select::Parameters);
        let mut buffer_paths = Vec::new();
        if buffers {
            let settled = self.collect(&model.valid(), &name, Values, Select::Buffers).entries;
            let prefix = name("");
            buffer_paths.extend(settled.iter().map(|entry| entry.name[prefix.len()..].to_string()));
            entries.extend(settled);
        }
        self.add(entries)?;
        for path in buffer_paths {
            if !self.buffers.contains(&path) {
                self.buffers.push(path);
            }
        }
        self.steps.insert(step);
        Ok(self)
    }

    /// Records the optimizer's settings as the metadata key `optimizer`, which `pita trace`
    /// compares with PyTorch's `param_groups` before any tensor: `{"framework": "burn", "name":
    /// <the config's type, AdamWConfig>, "lr": lr, "config": <the config as JSON>}`. `config` is
    /// the optimizer's config as passed to `init` (`AdamWConfig`, `AdamConfig`, `SgdConfig`, or
    /// any [`Config`]); `lr` the learning rate of the first step. A float field is written as
    /// the shortest decimal of its own precision (an `f32` epsilon 1e-5 is `1e-5`, not the
    /// `f64` nearest to the `f32`).
    ///
    /// Fails for a learning rate that is not finite, or if the recorder holds the settings already.
    pub fn optimizer<C: Config>(&mut self, lr: f64, config: &C) -> Result<&mut Self, Error> {
        if self.optimizer.is_some() {
            return Err(recording("optimizer is recorded already"));
        }
        if !lr.is_finite() {
            return Err(recording(format!("optimizer: the learning rate {lr} is not a number JSON can hold")));
        }
        let serialize = |e: serde_json::Error| Error::Serialize { message: e.to_string() };
        // Through the text: serde_json writes an f32 at its own shortest decimal.
        let config: serde_json::Value = serde_json::from_str(&serde_json::to_string(config).map_err(serialize)?).map_err(serialize)?;
        let type_name = std::any::type_name::<C>();
        let type_name = type_name.split('<').next().unwrap_or(type_name);
        let name = type_name.rsplit("::").next().unwrap_or(type_name);
        let settings = serde_json::json!({"framework": "burn", "name": name, "lr": lr, "config": config});
        self.optimizer = Some(settings.to_string());
        Ok(self)
    }

    /// Records the loss function's settings as the metadata key `loss_fn`, which `pita trace`
    /// compares with PyTorch's loss module: `{"kind": "CrossEntropyLoss", "settings":
    /// {"pad_tokens": null, "weights": null, "smoothing": 0.1, "logits": true, "reduction":
    /// "Mean"}}`. `loss` is the loss module (burn-nn's `CrossEntropyLoss`,
    /// `BinaryCrossEntropyLoss`, `MseLoss`, …), its settings read as a module's are (its fields;
    /// the cross-entropy losses' `weights` tensor as a list); `reduction` the one the port applies: burn's `CrossEntropyLoss` and
    /// `BinaryCrossEntropyLoss` always take the mean (`Reduction::Mean`), `MseLoss` takes it as
    /// `forward`'s argument.
    ///
    /// Fails if the recorder holds the loss's settings already.
    pub fn loss_fn<M: Module + ModuleDisplay + 'static>(&mut self, loss: &M, reduction: Reduction) -> Result<&mut Self, Error> {
        if self.loss_fn.is_some() {
            return Err(recording("loss_fn is recorded already"));
        }
        let mut loss_fn = settings::loss_fn(loss)?;
        loss_fn["settings"]["reduction"] = format!("{reduction:?}").into();
        self.loss_fn = Some(loss_fn.to_string());
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
    /// parameter's, else the first float tensor's) and, when there is something to say:
    /// `no_grad` (the parameters `grads` found no gradient for), `buffers` (a JSON list of the
    /// buffer paths recorded after each step), `optimizer` ([`optimizer`](Self::optimizer)),
    /// `modules` ([`params`](Self::params)), `loss_fn` ([`loss_fn`](Self::loss_fn)),
    /// `masks_replayed` (how many dropout masks [`replay::dropout`](crate::replay::dropout) took
    /// from a reference recording on this thread since the recorder was made).
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
        let Recorder { entries, acts, no_grad, buffers, optimizer, modules, loss_fn, steps, masks_before, .. } = self;
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
        if !buffers.is_empty() {
            dump.set_metadata("buffers", json(&buffers)?)?;
        }
        for (key, settings) in [("optimizer", optimizer), ("modules", modules), ("loss_fn", loss_fn)] {
            if let Some(settings) = settings {
                dump.set_metadata(key, settings)?;
            }
        }
        let masks_replayed = crate::replay::replayed_masks().saturating_sub(masks_before);
        if masks_replayed > 0 {
            dump.set_metadata("masks_replayed", masks_replayed)?;
        }
        Ok(dump)
    }

    fn dtype(&self) -> Option<String> {
        let float = |entry: &&Entry| entry.dtype.is_float();
        let first = self.entries.iter().filter(float).find(|entry| entry.name.starts_with(PARAM));
        first.or_else(|| self.entries.iter().find(float)).map(|entry| dtype_name(entry.dtype))
    }

    /// The entries of `model`'s float tensors of kind `select`, named by `name` from their
    /// paths, the paths of those `read` found nothing for, and whether the model has buffers.
    fn collect<M: Module, R: Read>(&self, model: &M, name: &dyn Fn(&str) -> String, read: R, select: Select) -> Found {
        let mut visit = Visit::new(&self.naming, name, read, select);
        model.visit(&mut visit);
        visit.finish()
    }

    /// Adds all of `entries` or, if one of their names is recorded already, none.
    fn add(&mut self, entries: Vec<Entry>) -> Result<&mut Self, Error> {
        let mut seen = HashSet::new();
        if let Some(entry) = entries.iter().find(|entry| self.recorded.contains(&entry.name) || !seen.insert(entry.name.as_str())) {
            return Err(recording(format!("{} is recorded already", entry.name)));
        }
        self.recorded.extend(entries.iter().map(|entry| entry.name.clone()));
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
                recorder.recorded.insert(entry.name.clone());
                recorder.entries.push(entry);
            }
        }
    }
}

#[cfg(test)]
mod tests;

#[cfg(test)]
mod convention;
