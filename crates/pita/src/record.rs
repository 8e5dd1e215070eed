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
//!
//! # Large models and long runs
//!
//! [`stream_to`](Recorder::stream_to) writes the recording while it is made, a shard of
//! [`shard_bytes`](Recorder::shard_bytes) at a time, so it costs one shard of memory rather than
//! the whole recording; [`finish`](Recorder::finish) completes it. [`every`](Recorder::every) and
//! [`steps`](Recorder::steps) make a light trace of a long run: step 1 in full, every step's loss
//! and gradient norms ([`grad_norms`](Recorder::grad_norms)), and the parameters every k steps
//! and after the last.

use std::cell::{Cell, RefCell};
use std::collections::{BTreeSet, HashMap, HashSet};
use std::fmt;
use std::marker::PhantomData;
use std::path::{Path, PathBuf};

use burn::config::Config;
use burn::module::{Module, ModuleDisplay};
#[cfg(feature = "autodiff")]
use burn::tensor::Gradients;
use burn::nn::loss::Reduction;
use burn::tensor::{DType, Device, Tensor, TensorData};

use crate::dump::{Dump, DumpBuilder, DumpTensor, Shards, SHARD_BYTES};
use crate::Error;

mod naming;
mod progress;
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
pub const RECORDING_KEYS: [&str; 13] = [
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
    "every",
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

/// `gradnorm<step>/<path>`: the L2 norm of a parameter's gradient in that step, a 0-d tensor.
#[cfg_attr(not(feature = "autodiff"), allow(dead_code))] // `Recorder::grad_norms` needs autodiff
pub(crate) fn gradnorm_name(step: usize, path: &str) -> String {
    format!("gradnorm{step}/{path}")
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

/// Reads a held tensor from its device: its data, and the device (which names the backend).
type Reader = Box<dyn FnOnce() -> Result<(TensorData, Device), Error> + Send>;

/// A tensor held until it is read: by [`Recorder::into_dump`], or at once when the recorder
/// streams ([`Recorder::stream_to`]).
struct Entry {
    name: String,
    dtype: DType,
    read: Reader,
}

impl Entry {
    fn new<const D: usize>(name: String, tensor: Tensor<D>) -> Self {
        let dtype = tensor.dtype();
        let key = name.clone();
        Entry { name, dtype, read: Box::new(move || read(&key, tensor)) }
    }

    /// The L2 norm of `tensor`, computed now in its dtype, held as a 0-d tensor.
    fn norm<const D: usize>(name: String, tensor: Tensor<D>) -> Self {
        let dtype = tensor.dtype();
        let norm = tensor.powi_scalar(2).sum().sqrt(); // one value, shape [1]
        let key = name.clone();
        let read = move || {
            let (data, device) = read(&key, norm)?;
            let (bytes, _, dtype) = data.into_parts();
            Ok((TensorData::from_bytes(bytes, [0usize; 0], dtype), device))
        };
        Entry { name, dtype, read: Box::new(read) }
    }

    /// Reads the tensor into the dump's form.
    fn convert(self) -> Result<(String, DumpTensor, Device), Error> {
        let (data, device) = (self.read)()?;
        let tensor = DumpTensor::from_data(&self.name, data)?;
        Ok((self.name, tensor, device))
    }
}

fn read<const D: usize>(name: &str, tensor: Tensor<D>) -> Result<(TensorData, Device), Error> {
    let device = tensor.device();
    let data = tensor.try_into_data().map_err(|e| Error::Read { name: name.to_string(), message: e.to_string() })?;
    Ok((data, device))
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
/// device once, in [`into_dump`](Self::into_dump). With [`stream_to`](Self::stream_to) it reads
/// each when recorded instead and writes them shard by shard, [`finish`](Self::finish) writing
/// the rest: memory holds one shard at most. [`every`](Self::every) records a light trace of a
/// long run.
#[must_use = "a recorder records nothing until its methods are called and `into_dump` or `finish` writes it"]
pub struct Recorder {
    naming: Names,
    /// The tensors not read yet: all of them, or (streaming) the taps of a guard just dropped.
    entries: Vec<Entry>,
    /// Every name recorded, in the order recorded.
    names: Vec<String>,
    recorded: HashSet<String>,
    /// The first float parameter's dtype, and the first float tensor's.
    dtypes: (Option<DType>, Option<DType>),
    sink: Option<Shards>,
    shard_bytes: usize,
    every: Option<usize>,
    /// The run's number of steps, from [`steps`](Recorder::steps).
    total_steps: Option<usize>,
    progress: progress::Progress,
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
            names: Vec::new(),
            recorded: HashSet::new(),
            dtypes: (None, None),
            sink: None,
            shard_bytes: SHARD_BYTES,
            every: None,
            total_steps: None,
            progress: progress::Progress::default(),
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
            .field("every", &self.every)
            .field("total_steps", &self.total_steps)
            .field("streams", &self.sink.is_some())
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

    /// Streams the recording to `path` (`<name>.safetensors`): each tensor is read from its
    /// device when recorded (a tap's when its guard drops, at the next call) and held only until
    /// the tensors held would pass [`shard_bytes`](Self::shard_bytes); then they are written as
    /// a shard, `<name>-00001.safetensors`, `<name>-00002.safetensors`, … beside `path`, and freed.
    /// [`finish`](Self::finish) writes the rest and the index `<name>.safetensors.index.json`
    /// (Hugging Face's layout, which `pita trace` reads for `path`), or `path` alone, as
    /// [`Dump::write_to`] writes it, when everything fit in one shard. `builder` gives the
    /// provenance, as for [`into_dump`](Self::into_dump); each shard carries it and `recording`,
    /// the index every metadata key.
    ///
    /// Nothing half-written: each file is written under a temporary name and renamed; if a
    /// write fails, or the recorder is dropped before `finish`, every file of this recording is
    /// removed. The files of an earlier recording at `path` are removed when this one is complete.
    ///
    /// Fails for a path that does not end in `.safetensors`, a folder that cannot be made, and as
    /// [`into_dump`](Self::into_dump) fails for the builder.
    pub fn stream_to(mut self, path: impl AsRef<Path>, builder: DumpBuilder) -> Result<Self, Error> {
        let mut dump = builder.build()?;
        refuse_recording_keys(&dump, "Recorder::finish sets it")?;
        dump.set_metadata("recording", RECORDING)?;
        self.sink = Some(Shards::new(path.as_ref(), self.shard_bytes, dump)?);
        Ok(self)
    }

    /// The size of a shard for [`stream_to`](Self::stream_to), in bytes of tensor data
    /// (default [`SHARD_BYTES`], 256 MiB); a tensor larger than it makes a shard of its own.
    pub fn shard_bytes(mut self, bytes: usize) -> Self {
        self.shard_bytes = bytes;
        if let Some(sink) = self.sink.as_mut() {
            sink.set_limit(bytes);
        }
        self
    }

    /// The run's number of steps, `N`: the metadata key `steps`, the last step
    /// [`every`](Self::every) records, and the progress line `[k/N] record step k…` (on stderr,
    /// on a terminal only; `PITA_PROGRESS=0` silences it, `=1` forces it). Steps beyond `N` are
    /// refused.
    pub fn steps(mut self, steps: usize) -> Self {
        self.total_steps = Some(steps);
        self
    }

    /// A light trace of a long run (needs [`steps`](Self::steps)): [`step`](Self::step)
    /// records the parameters and buffers after step 1, after each step that is a multiple of
    /// `every`, and after the last step `N`, and does nothing for the others. With
    /// [`loss`](Self::loss) and `grad_norms` (`gradnorm<k>/<path>`) called every step and the
    /// activations and gradients of step 1, that is the light trace `pita trace` follows step by
    /// step. Writes the metadata key `every`. Step 1 is recorded in full either way.
    pub fn every(mut self, every: usize) -> Self {
        self.every = Some(every);
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
    /// beyond 999_999_999 (nine digits) or [`steps`](Self::steps), a loss of more than one value (shape other than `[1]`),
    /// or a step recorded already.
    pub fn loss(&mut self, step: usize, loss: &Tensor<1>) -> Result<&mut Self, Error> {
        let name = loss_name(step);
        self.begin_step(&name, step)?;
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

    /// Records the L2 norm of each parameter's gradient in step `step` as `gradnorm<step>/<path>`
    /// (feature `autodiff`): a 0-d tensor in the gradient's dtype, `sqrt(sum(grad²))` computed
    /// now on the gradient's device (a packed tensor's norm is its blocks' together). Call it
    /// every step of a long run, before the optimizer consumes `grads`, as
    /// [`grads`](Self::grads) is called. Parameters without a gradient are left out.
    ///
    /// Fails for a step 0 or beyond 999_999_999 or [`steps`](Self::steps), if no parameter has a
    /// gradient in `grads`, or if the step's norms are recorded already.
    #[cfg(feature = "autodiff")]
    pub fn grad_norms<M: Module>(&mut self, step: usize, model: &M, grads: &Gradients) -> Result<&mut Self, Error> {
        let what = gradnorm_name(step, "");
        self.begin_step(&what, step)?;
        let name = |path: &str| gradnorm_name(step, path);
        let mut visit = Visit::new(&self.naming, &name, visit::Grads(grads), Select::Parameters).norms();
        model.visit(&mut visit);
        let found = visit.finish();
        if found.entries.is_empty() && !found.unread.is_empty() {
            return Err(recording(format!("{what}: no parameter of the model has a gradient in these Gradients")));
        }
        self.add(found.entries)
    }

    /// Records each float parameter of `model` after optimizer step `step` (1, 2, …) as
    /// `step<step>/<path>`, and each buffer (BatchNorm's `running_mean` and `running_var`) as
    /// it stands after that step's forward, listing their paths in the metadata key `buffers`.
    /// With [`every`](Self::every), only after step 1, the multiples of `every` and the last
    /// step; the others record nothing (and cost nothing).
    /// Fails for a step 0 or beyond 999_999_999 (nine digits) or [`steps`](Self::steps), a step
    /// recorded already, or `every` without `steps` (or either 0).
    ///
    /// burn keeps the running statistics a forward computed pending on its thread until the next
    /// forward reads them; reading the buffers settles them (`Module::valid`), which changes
    /// nothing the next forward computes.
    pub fn step<M: Module>(&mut self, step: usize, model: &M) -> Result<&mut Self, Error> {
        self.begin_step(&format!("step{step}"), step)?;
        if self.steps.contains(&step) {
            return Err(recording(format!("step{step} is recorded already")));
        }
        if !self.records_parameters_after(step)? {
            self.steps.insert(step);
            return Ok(self);
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
        self.names.iter().map(String::as_str)
    }

    /// Writes what a recorder made with [`stream_to`](Self::stream_to) still holds, with the
    /// metadata [`into_dump`](Self::into_dump) sets (and `every`), and returns the path written:
    /// the `.safetensors` path given when everything fit in one shard, else the index
    /// (`<name>.safetensors.index.json`). Clears the progress line.
    ///
    /// Fails for a recorder that does not stream (use `into_dump`), and as the writes fail;
    /// then every file of this recording is removed.
    pub fn finish(mut self) -> Result<PathBuf, Error> {
        self.progress.clear();
        if self.sink.is_none() {
            return Err(recording("finish writes a recorder made with stream_to; this one holds its tensors: use into_dump"));
        }
        self.store_taps()?;
        let metadata = self.metadata()?;
        let sink = self.sink.take().expect("a streaming recorder");
        let keys: Vec<(&str, String)> = metadata.iter().map(|(key, value)| (*key, value.clone())).collect();
        sink.finish(&keys)
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
    pub fn into_dump(mut self, builder: DumpBuilder) -> Result<Dump, Error> {
        self.progress.clear();
        let mut dump = builder.build()?;
        refuse_recording_keys(&dump, "Recorder::into_dump sets it")?;
        if self.sink.is_some() {
            return Err(recording("into_dump: this recorder streams to a file (stream_to): call finish"));
        }
        for entry in std::mem::take(&mut self.entries) {
            let (name, tensor, device) = entry.convert()?;
            dump.insert(&name, tensor)?;
            dump.name_backend(&device);
        }
        for (key, value) in self.metadata()? {
            dump.set_metadata(key, value)?;
        }
        Ok(dump)
    }

    /// The recording's metadata keys ([`into_dump`](Self::into_dump) lists them).
    fn metadata(&self) -> Result<Vec<(&'static str, String)>, Error> {
        let json = |names: &[String]| serde_json::to_string(names).map_err(|e| Error::Serialize { message: e.to_string() });
        let steps = self.total_steps.unwrap_or(self.steps.len());
        let mut metadata = vec![("recording", RECORDING.to_string()), ("execution_order", json(&self.acts)?), ("steps", steps.to_string())];
        if let Some(dtype) = self.dtypes.0.or(self.dtypes.1) {
            metadata.push(("dtype", dtype_name(dtype)));
        }
        if !self.no_grad.is_empty() {
            metadata.push(("no_grad", json(&self.no_grad)?));
        }
        if !self.buffers.is_empty() {
            metadata.push(("buffers", json(&self.buffers)?));
        }
        for (key, settings) in [("optimizer", &self.optimizer), ("modules", &self.modules), ("loss_fn", &self.loss_fn)] {
            if let Some(settings) = settings {
                metadata.push((key, settings.clone()));
            }
        }
        let masks_replayed = crate::replay::replayed_masks().saturating_sub(self.masks_before);
        if masks_replayed > 0 {
            metadata.push(("masks_replayed", masks_replayed.to_string()));
        }
        if let Some(every) = self.every {
            metadata.push(("every", every.to_string()));
        }
        Ok(metadata)
    }

    /// Checks a step number (against [`steps`](Self::steps) too), stores the taps of a guard
    /// dropped since the last call, and draws the progress line.
    fn begin_step(&mut self, what: &str, step: usize) -> Result<(), Error> {
        check_step(what, step)?;
        if let Some(total) = self.total_steps {
            if step > total {
                return Err(recording(format!("{what}: the run has {total} steps (Recorder::steps)")));
            }
            self.progress.step(step, total)?;
        }
        self.store_taps()
    }

    /// Whether [`step`](Self::step) records the parameters after `step`: always, unless
    /// [`every`](Self::every) makes a light trace.
    fn records_parameters_after(&self, step: usize) -> Result<bool, Error> {
        let Some(every) = self.every else { return Ok(true) };
        if every == 0 {
            return Err(recording("every(0): parameters are recorded every k steps, k from 1"));
        }
        let last = self.total_steps.ok_or_else(|| recording("every(k) needs steps(n): the last step's parameters are recorded whatever k"))?;
        Ok(step == 1 || step.is_multiple_of(every) || step == last)
    }

    /// The entries of `model`'s float tensors of kind `select`, named by `name` from their
    /// paths, the paths of those `read` found nothing for, and whether the model has buffers.
    fn collect<M: Module, R: Read>(&self, model: &M, name: &dyn Fn(&str) -> String, read: R, select: Select) -> Found {
        let mut visit = Visit::new(&self.naming, name, read, select);
        model.visit(&mut visit);
        visit.finish()
    }

    /// Adds all of `entries` or, if one of their names is recorded already, none; a streaming
    /// recorder reads them now.
    fn add(&mut self, entries: Vec<Entry>) -> Result<&mut Self, Error> {
        self.store_taps()?;
        let mut seen = HashSet::new();
        if let Some(entry) = entries.iter().find(|entry| self.recorded.contains(&entry.name) || !seen.insert(entry.name.as_str())) {
            return Err(recording(format!("{} is recorded already", entry.name)));
        }
        for entry in &entries {
            self.note(entry);
        }
        self.entries.extend(entries);
        self.store_taps()?;
        Ok(self)
    }

    /// Notes a new entry's name and dtype.
    fn note(&mut self, entry: &Entry) {
        self.recorded.insert(entry.name.clone());
        self.names.push(entry.name.clone());
        if entry.dtype.is_float() {
            if entry.name.starts_with(PARAM) {
                self.dtypes.0.get_or_insert(entry.dtype);
            }
            self.dtypes.1.get_or_insert(entry.dtype);
        }
    }

    /// A streaming recorder reads the tensors it holds and hands them to its shards.
    fn store_taps(&mut self) -> Result<(), Error> {
        let Some(sink) = self.sink.as_mut() else { return Ok(()) };
        for entry in std::mem::take(&mut self.entries) {
            let (name, tensor, device) = entry.convert()?;
            sink.current().name_backend(&device);
            sink.push(&name, tensor)?;
        }
        Ok(())
    }
}

/// Refuses a builder holding a key the recorder sets.
fn refuse_recording_keys(dump: &Dump, hint: &'static str) -> Result<(), Error> {
    match RECORDING_KEYS.iter().find(|key| dump.metadata().contains_key(**key)) {
        Some(key) => Err(Error::ReservedKey { key: key.to_string(), hint }),
        None => Ok(()),
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
                recorder.note(&entry);
                recorder.entries.push(entry); // a streaming recorder reads them at its next call
            }
        }
    }
}

#[cfg(test)]
mod tests;

#[cfg(test)]
mod convention;
