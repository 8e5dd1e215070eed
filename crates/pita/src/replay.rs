//! Replaying a reference recording's dropout masks in the burn run, so that a port with dropout
//! on computes what the PyTorch run computed. Seeding cannot do it: the two frameworks draw their
//! masks from different generators, so the same seed gives different masks.
//!
//! `pita.torch` records the keep-mask of each dropout in step k's forward as `mask<k>/<module>`
//! (BOOL, true = kept, the shape of the dropout's input; `#n` for the n-th random op inside the
//! same module in that step), `<module>` being the innermost PyTorch module executing: an
//! `nn.Dropout` named `drop` gives `mask1/drop`; the attention-weights dropout of an
//! `nn.MultiheadAttention` at `layers.0.self_attn` gives `mask1/layers.0.self_attn`.
//! [`Replay::from_file`] reads them; while the guard of [`Replay::step`] lives, [`dropout`]
//! applies them in place of burn's random masks. Only dropouts called through [`dropout`] take
//! them: burn's modules that call a dropout inside (`MultiHeadAttention`, `TransformerEncoder`)
//! draw their own unless run through [`tapped`](crate::tapped)'s forwards.
//!
//! ```rust
//! use burn::nn::DropoutConfig;
//! use burn::tensor::{Device, Tensor, TensorData};
//! use pita::replay::{self, Replay};
//!
//! # fn main() -> Result<(), pita::Error> {
//! // A port reads the reference's masks: Replay::from_file(Path::new("torch-record.safetensors"))?
//! let replay = Replay::from_masks([
//!     ("mask1/drop", TensorData::from([true, false, true, true])),
//!     ("mask2/drop", TensorData::from([false, true, true, true])),
//! ])?;
//! let drop = DropoutConfig::new(0.5).init();
//! let x = Tensor::<1>::from_floats([1.0, 2.0, 3.0, 4.0], &Device::flex().autodiff());
//! for k in 1..=2 {
//!     let _replaying = replay.step(k);                   // step k's masks, on this thread
//!     let y = replay::dropout("drop", &drop, x.clone()); // x * (mask / (1 - p)), as PyTorch computes it
//!     // ... the loss, backward, the optimizer step ...
//!     let want = if k == 1 { [2.0, 0.0, 6.0, 8.0] } else { [0.0, 4.0, 6.0, 8.0] };
//!     assert_eq!(y.into_data().try_to_vec::<f32>().unwrap(), want);
//! }
//! # Ok(())
//! # }
//! ```

use std::cell::{Cell, RefCell};
use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::fmt;
use std::marker::PhantomData;
use std::path::Path;
use std::sync::Arc;

use burn::nn::Dropout;
use burn::tensor::{Tensor, TensorData};
use safetensors::tensor::Dtype;
use safetensors::SafeTensors;

use crate::record::{mask_name, MAX_STEP, RECORDING};
use crate::Error;

thread_local! {
    /// The replay active on this thread, made by the innermost live [`Replaying`] guard.
    static ACTIVE: RefCell<Option<Active>> = const { RefCell::new(None) };
    /// How many masks [`dropout`] has applied on this thread, ever.
    static REPLAYED: Cell<usize> = const { Cell::new(0) };
}

/// Whether a replay is active on this thread (a [`Replaying`] guard lives).
pub(crate) fn active() -> bool {
    ACTIVE.with(|slot| slot.borrow().is_some())
}

/// How many masks [`dropout`] has applied on this thread since the thread started: a running
/// count, so a recorder reads it when it starts and when it ends, and writes the difference as
/// the metadata `masks_replayed`.
#[allow(dead_code)] // until the recorder writes `masks_replayed`
pub(crate) fn replayed_masks() -> usize {
    REPLAYED.with(Cell::get)
}

/// One keep-mask: its shape and its elements (true = kept), row-major.
struct Mask {
    shape: Vec<usize>,
    keep: Vec<bool>,
}

/// The masks of a reference recording, by name, and where they came from.
struct Masks {
    source: String,
    by_name: BTreeMap<String, Mask>,
}

/// What [`dropout`] reads while a [`Replaying`] guard lives.
struct Active {
    masks: Arc<Masks>,
    prefix: String,
    step: usize,
    /// The random ops taken so far in this step, per module.
    calls: HashMap<String, usize>,
}

/// The dropout masks of a reference recording (every `mask<k>/<module>[#n]` tensor), ready to be
/// replayed step by step with [`step`](Self::step). Cloning it is cheap (the masks are shared).
#[derive(Clone)]
pub struct Replay {
    masks: Arc<Masks>,
    prefix: String,
}

impl fmt::Debug for Replay {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let masks = self.masks.by_name.len();
        f.debug_struct("Replay").field("source", &self.masks.source).field("masks", &masks).field("prefix", &self.prefix).finish()
    }
}

impl Replay {
    /// Reads every `mask<k>/<module>[#n]` tensor of the recording at `path` (one `.safetensors`
    /// file, as `pita.torch` writes it); the other tensors are left alone.
    ///
    /// Cost: reads the file and copies the masks (one byte per element) into memory.
    ///
    /// Fails with [`Error::Io`] if the file cannot be read or is not safetensors, and with
    /// [`Error::Recording`] for a sharded recording (`*.safetensors.index.json`: record into one
    /// file), a file that is not a recording (no metadata `recording = pita-record/1`), or a mask
    /// that is not BOOL.
    pub fn from_file(path: &Path) -> Result<Replay, Error> {
        let shown = path.display();
        if path.to_string_lossy().to_lowercase().ends_with(".safetensors.index.json") {
            return Err(recording(format!("{shown}: a sharded recording cannot be replayed; record the reference into one .safetensors file")));
        }
        let bytes = std::fs::read(path).map_err(|e| Error::io(path, e))?;
        let not_safetensors = |e: safetensors::SafeTensorError| Error::io(path, std::io::Error::new(std::io::ErrorKind::InvalidData, e.to_string()));
        let (_, header) = SafeTensors::read_metadata(&bytes).map_err(not_safetensors)?;
        let format = header.metadata().as_ref().and_then(|m| m.get("recording")).map(String::as_str);
        if format != Some(RECORDING) {
            return Err(recording(format!(
                "{shown} is not a recording (its metadata has no recording = {RECORDING}): masks are replayed from a pita.torch recording"
            )));
        }
        let tensors = SafeTensors::deserialize(&bytes).map_err(not_safetensors)?;
        let mut by_name = BTreeMap::new();
        for (name, view) in tensors.iter() {
            if mask_step(name).is_none() {
                continue;
            }
            if view.dtype() != Dtype::BOOL {
                return Err(recording(format!("{shown}: mask {name} is {:?}; a mask is BOOL (true = kept)", view.dtype())));
            }
            let keep = view.data().iter().map(|&byte| byte != 0).collect();
            by_name.insert(name.to_string(), Mask { shape: view.shape().to_vec(), keep });
        }
        Ok(Replay::new(shown.to_string(), by_name))
    }

    /// A replay of the masks given, by name (`mask<k>/<module>[#n]`), each a bool [`TensorData`]
    /// (true = kept): for tests, or masks read otherwise than from a recording. Fails with
    /// [`Error::Recording`] for a name outside the convention or data that is not bool.
    pub fn from_masks<S: Into<String>>(masks: impl IntoIterator<Item = (S, TensorData)>) -> Result<Replay, Error> {
        let mut by_name = BTreeMap::new();
        for (name, data) in masks {
            let name = name.into();
            if mask_step(&name).is_none() {
                return Err(recording(format!("{name:?} is not a mask name (mask<k>/<module>, or mask<k>/<module>#<n>)")));
            }
            if !data.dtype().is_bool() {
                return Err(recording(format!("mask {name} is {:?}; a mask is bool (true = kept)", data.dtype())));
            }
            let keep = data.try_to_vec_as::<bool>().map_err(|e| Error::Read { name: name.clone(), message: format!("{e:?}") })?;
            by_name.insert(name, Mask { shape: data.shape().to_vec(), keep });
        }
        Ok(Replay::new("Replay::from_masks".to_string(), by_name))
    }

    fn new(source: String, by_name: BTreeMap<String, Mask>) -> Replay {
        Replay { masks: Arc::new(Masks { source, by_name }), prefix: String::new() }
    }

    /// Prepends `prefix` to the module of every mask looked up (`prefix("bert.")` makes
    /// `dropout("encoder.dropout", …)` take `mask<k>/bert.encoder.dropout`), as
    /// [`Recorder::prefix`](crate::record::Recorder::prefix) does to the taps, for a PyTorch model
    /// that holds the ported one under an attribute.
    pub fn prefix(mut self, prefix: impl Into<String>) -> Self {
        self.prefix = prefix.into();
        self
    }

    /// The number of masks, all steps together.
    pub fn len(&self) -> usize {
        self.masks.by_name.len()
    }

    /// Whether the recording holds no mask (recorded in eval mode, or without dropout).
    pub fn is_empty(&self) -> bool {
        self.masks.by_name.is_empty()
    }

    /// Makes [`dropout`] apply step `step`'s masks (1, 2, …), on this thread, while the returned
    /// guard lives: bind it around that step's forward pass (`let _replaying = replay.step(k);`).
    /// Each guard numbers the calls afresh: the first active dropout inside module `m` takes
    /// `mask<k>/m`, the second `mask<k>/m#2`, as `pita.torch` numbers them.
    ///
    /// Guards nest (the innermost applies; drop them in the reverse order of their making, as
    /// scopes do) and cannot leave their thread. Free: no device work.
    pub fn step(&self, step: usize) -> Replaying<'_> {
        let active = Active { masks: Arc::clone(&self.masks), prefix: self.prefix.clone(), step, calls: HashMap::new() };
        let outer = ACTIVE.with(|slot| slot.replace(Some(active)));
        Replaying { outer, _replay: PhantomData, _thread: PhantomData }
    }
}

/// While it lives, [`dropout`] on this thread applies one step's masks of a [`Replay`]; made by
/// [`Replay::step`]. Dropping it hands the thread back to the guard it was made under, if any.
#[must_use = "masks are replayed only while the guard lives: bind it, `let _replaying = replay.step(k);`"]
pub struct Replaying<'a> {
    outer: Option<Active>,
    _replay: PhantomData<&'a Replay>,
    /// Not `Send`: the guard restores the thread-local state of the thread it was made on.
    _thread: PhantomData<*const ()>,
}

impl fmt::Debug for Replaying<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Replaying").finish_non_exhaustive()
    }
}

impl Drop for Replaying<'_> {
    fn drop(&mut self) {
        ACTIVE.with(|slot| slot.replace(self.outer.take()));
    }
}

// book:begin replay_dropout
/// `dropout.forward(x)`, or, while a [`Replay::step`] guard lives on this thread, the dropout
/// with the reference's mask: `mask<k>/<module>` (`#n` for the n-th active dropout inside
/// `module` in this step), applied as PyTorch applies it, `x * (mask / (1 - p))` (the mask in
/// x's dtype divided first, then the product: bit for bit PyTorch's result, which burn's own
/// `(x * mask) * (1 / (1 - p))` is not). The gradient flows to `x` through the mask, as in PyTorch.
///
/// `module` is the PyTorch module path the mask is recorded under: the `nn.Dropout`'s own path
/// (`encoder.dropout`), or, for a functional dropout (`F.dropout`, attention dropout), the path
/// of the module calling it.
///
/// A dropout burn would not apply (its `training` flag cleared by `freeze`, a device without
/// autodiff, p = 0) returns `x` as burn does, and takes no mask.
///
/// # Panics
///
/// While a replay is active, if the reference holds no such mask, or a mask of another shape
/// than `x`'s: the message names the mask. (A forward returns a tensor, not a `Result`; the
/// panic names the line of the call.)
///
/// Cost: without a replay, one thread-local read more than `dropout.forward`. With one, the mask
/// built on x's device (an O(n) host-to-device copy) and one division and one product.
#[track_caller]
pub fn dropout<const D: usize>(module: &str, dropout: &Dropout, x: Tensor<D>) -> Tensor<D> {
    if !active() {
        return dropout.forward(x);
    }
    if !applies(dropout, &x) {
        return x;
    }
    let keep = ACTIVE.with(|slot| {
        let mut slot = slot.borrow_mut();
        let active = slot.as_mut().expect("a replay is active");
        active.mask(module, x.dims().as_slice())
    });
    let keep = match keep {
        Ok(keep) => keep,
        Err(message) => panic!("pita::replay::dropout: {message}"),
    };
    let scale = Tensor::<D>::from_data(keep, (&x.device(), x.dtype())).div_scalar(1.0 - dropout.prob);
    REPLAYED.with(|count| count.set(count.get() + 1));
    x * scale
}
// book:end

/// Whether burn's `Dropout::forward` would drop anything (burn-nn's `dropout.rs`).
fn applies<const D: usize>(dropout: &Dropout, x: &Tensor<D>) -> bool {
    dropout.training.is_enabled() && x.device().is_autodiff() && dropout.prob != 0.0
}

impl Active {
    /// The next mask of `module` in this step, as 0.0/1.0 values of `shape`, or why there is none.
    fn mask(&mut self, module: &str, shape: &[usize]) -> Result<TensorData, String> {
        let module = format!("{}{module}", self.prefix);
        let call = self.calls.entry(module.clone()).or_insert(0);
        *call += 1;
        let name = mask_name(self.step, &module, *call);
        let source = &self.masks.source;
        let Some(mask) = self.masks.by_name.get(&name) else {
            let (step, held) = (self.step, self.masks.of_step(self.step));
            return Err(format!("the reference {source} holds no mask {name} (call {call} of an active dropout inside {module:?} in step {step}); {held}"));
        };
        if mask.shape != shape {
            return Err(format!("mask {name} of the reference {source} has shape {:?}, the dropout's input {shape:?}", mask.shape));
        }
        let values: Vec<f32> = mask.keep.iter().map(|&kept| if kept { 1.0 } else { 0.0 }).collect();
        Ok(TensorData::new(values, mask.shape.clone()))
    }
}

impl Masks {
    /// What the reference holds for `step`, for a missing mask's message.
    fn of_step(&self, step: usize) -> String {
        let names: Vec<&str> = self.by_name.keys().filter(|name| mask_step(name) == Some(step)).map(String::as_str).collect();
        if !names.is_empty() {
            return format!("its masks of step {step}: {}", names.join(", "));
        }
        let steps: BTreeSet<usize> = self.by_name.keys().filter_map(|name| mask_step(name)).collect();
        match steps.len() {
            0 => "it holds no mask at all (was the reference recorded in train mode, with dropout?)".to_string(),
            _ => format!("it holds no mask of step {step}, only of steps {steps:?}"),
        }
    }
}

/// The step of a mask name, `mask<k>/<module>[#n]` (k from 1, nine digits at most, no leading
/// zero; a module), as `pita/recording.py` parses it; None for any other name.
fn mask_step(name: &str) -> Option<usize> {
    let (step, module) = name.strip_prefix("mask")?.split_once('/')?;
    let digits = !step.is_empty() && step.len() <= 9 && step.bytes().all(|b| b.is_ascii_digit()) && !step.starts_with('0');
    let step: usize = if digits { step.parse().ok()? } else { return None };
    (!module.is_empty() && step <= MAX_STEP).then_some(step)
}

fn recording(message: String) -> Error {
    Error::Recording { message }
}

#[cfg(test)]
mod tests {
    use super::*;
    use burn::nn::DropoutConfig;
    use burn::tensor::Device;

    fn device() -> Device {
        Device::flex().autodiff()
    }

    fn bits<const D: usize>(tensor: Tensor<D>) -> Vec<u32> {
        tensor.into_data().try_to_vec::<f32>().unwrap().into_iter().map(f32::to_bits).collect()
    }

    fn mask(values: &[bool]) -> TensorData {
        TensorData::new(values.to_vec(), [values.len()])
    }

    fn replay(masks: &[(&str, &[bool])]) -> Replay {
        Replay::from_masks(masks.iter().map(|(name, keep)| (*name, mask(keep)))).unwrap()
    }

    /// x * (m / (1 - p)) computed here, in f32, element by element: what PyTorch computes.
    fn expected(x: &[f32], keep: &[bool], p: f64) -> Vec<u32> {
        let scale = 1.0f32 / (1.0 - p) as f32;
        x.iter().zip(keep).map(|(&x, &kept)| (x * if kept { scale } else { 0.0 }).to_bits()).collect()
    }

    #[test]
    fn applies_the_mask_and_its_gradient() {
        let keep = [true, false, true, true, false, true];
        let values = [0.5f32, -1.25, 3.0, -0.7, 2.0, 1e-3];
        let replay = replay(&[("mask1/drop", &keep)]);
        let drop = DropoutConfig::new(0.3).init();
        let x = Tensor::<1>::from_floats(values, &device()).require_grad();
        let y = {
            let _replaying = replay.step(1);
            dropout("drop", &drop, x.clone())
        };
        assert_eq!(bits(y.clone()), expected(&values, &keep, 0.3));
        let grads = y.sum().backward();
        let grad = x.grad(&grads).unwrap();
        assert_eq!(bits(grad), expected(&[1.0; 6], &keep, 0.3), "d/dx = mask / (1 - p)");
    }

    /// `1 + 0.00137 i` (i = 0, 1, …) in f32.
    fn ramp(n: usize) -> Vec<f32> {
        (0..n).map(|i| 1.0 + i as f32 * 0.001_37).collect()
    }

    /// PyTorch divides the mask first (`_dropout_impl`: `noise.div_(1 - p)`, then `input * noise`).
    /// At p = 0.15 the other orders round differently in f32 (burn's own `1 / (1 - p)` is rounded
    /// from f64, 1.1764706 against PyTorch's 1.1764705): the replay is the first.
    #[test]
    fn divides_the_mask_before_the_product() {
        let p = 0.15;
        let values = ramp(2000);
        let keep = vec![true; values.len()];
        let replay = Replay::from_masks([("mask1/drop", mask(&keep))]).unwrap();
        let y = {
            let _replaying = replay.step(1);
            bits(dropout("drop", &DropoutConfig::new(p).init(), Tensor::<1>::from_floats(&values[..], &device())))
        };
        let keep_prob = (1.0 - p) as f32;
        let product_first: Vec<u32> = values.iter().map(|&x| (x / keep_prob).to_bits()).collect();
        let burns_order: Vec<u32> = values.iter().map(|&x| (x * (1.0 / (1.0 - p)) as f32).to_bits()).collect();
        let division_first = expected(&values, &keep, p);
        assert_ne!(division_first, product_first, "the case must tell the orders apart");
        assert_ne!(division_first, burns_order, "the case must tell the orders apart");
        assert_eq!(y, division_first);
    }

    /// torch 2.15.0's own output: `torch.manual_seed(0); F.dropout(x, 0.15, training=True)` on CPU
    /// for x = `ramp(8)` in float32, printed as `[hex(v & 0xffffffff) for v in
    /// out.view(torch.int32).tolist()]`; its mask is `out != 0`. Elements 4 to 6 are those where
    /// the product first would round otherwise, and every kept one where burn's order would.
    #[test]
    fn matches_torchs_output_bits() {
        const TORCH: [u32; 8] = [0x0, 0x3f96cb66, 0x3f970037, 0x0, 0x3f9769d8, 0x3f979ea8, 0x3f97d378, 0x3f98084a];
        let keep: Vec<bool> = TORCH.iter().map(|&b| b != 0).collect();
        let replay = Replay::from_masks([("mask1/drop", mask(&keep))]).unwrap();
        let drop = DropoutConfig::new(0.15).init();
        let x = Tensor::<1>::from_floats(&ramp(8)[..], &device());
        let replayed = {
            let _replaying = replay.step(1);
            bits(dropout("drop", &drop, x.clone()))
        };
        assert_eq!(replayed, TORCH);
        // The negative control: burn's arithmetic on the same mask, (x * m) * (1 / (1 - p)).
        let keep_floats = Tensor::<1>::from_data(TensorData::new(keep.iter().map(|&k| f32::from(u8::from(k))).collect::<Vec<_>>(), [8]), &device());
        assert_ne!(bits((x * keep_floats) * (1.0 / (1.0 - 0.15))), TORCH);
    }

    #[test]
    fn numbers_calls_per_module_and_step() {
        let replay = replay(&[
            ("mask1/drop", &[true, false]),
            ("mask1/drop#2", &[false, true]),
            ("mask1/other", &[false, false]),
            ("mask2/drop", &[true, true]),
        ]);
        let drop = DropoutConfig::new(0.5).init();
        let x = || Tensor::<1>::from_floats([1.0, 3.0], &device());
        let values = |t: Tensor<1>| t.into_data().try_to_vec::<f32>().unwrap();
        let before = replayed_masks();
        {
            let _replaying = replay.step(1);
            assert_eq!(values(dropout("drop", &drop, x())), [2.0, 0.0]);
            assert_eq!(values(dropout("other", &drop, x())), [0.0, 0.0]);
            assert_eq!(values(dropout("drop", &drop, x())), [0.0, 6.0]);
        }
        {
            let _replaying = replay.step(2);
            assert_eq!(values(dropout("drop", &drop, x())), [2.0, 6.0]);
        }
        assert_eq!(replayed_masks() - before, 4);
    }

    #[test]
    #[should_panic(expected = "pita::replay::dropout: the reference Replay::from_masks holds no mask mask1/drop#2 \
                               (call 2 of an active dropout inside \"drop\" in step 1); its masks of step 1: mask1/drop")]
    fn a_missing_mask_panics_naming_it() {
        let replay = replay(&[("mask1/drop", &[true, true])]);
        let drop = DropoutConfig::new(0.5).init();
        let _replaying = replay.step(1);
        let x = Tensor::<1>::from_floats([1.0, 3.0], &device());
        dropout("drop", &drop, x.clone());
        dropout("drop", &drop, x);
    }

    #[test]
    #[should_panic(expected = "holds no mask mask3/drop (call 1 of an active dropout inside \"drop\" in step 3); \
                               it holds no mask of step 3, only of steps {1, 2}")]
    fn a_step_without_masks_panics_naming_the_steps() {
        let replay = replay(&[("mask1/drop", &[true]), ("mask2/drop", &[true])]);
        let _replaying = replay.step(3);
        dropout("drop", &DropoutConfig::new(0.5).init(), Tensor::<1>::from_floats([1.0], &device()));
    }

    #[test]
    #[should_panic(expected = "pita::replay::dropout: mask mask1/drop of the reference Replay::from_masks has shape [3], the dropout's input [2]")]
    fn a_mask_of_another_shape_panics_naming_it() {
        let replay = replay(&[("mask1/drop", &[true, true, false])]);
        let _replaying = replay.step(1);
        dropout("drop", &DropoutConfig::new(0.5).init(), Tensor::<1>::from_floats([1.0, 3.0], &device()));
    }

    #[test]
    fn without_a_replay_it_is_burns_dropout() {
        let x = Tensor::<1>::ones([4000], &device());
        let identity = dropout("drop", &DropoutConfig::new(0.0).init(), x.clone());
        assert_eq!(bits(identity), bits(x.clone()));
        // burn's own masks: every value 0 or 1 / (1 - p), about half of them dropped.
        let dropped = dropout("drop", &DropoutConfig::new(0.5).init(), x).into_data().try_to_vec::<f32>().unwrap();
        assert!(dropped.iter().all(|&v| v == 0.0 || v == 2.0));
        let zeros = dropped.iter().filter(|&&v| v == 0.0).count();
        assert!((1800..2200).contains(&zeros), "{zeros} of 4000 dropped at p = 0.5");
        // A guard dropped leaves no replay behind.
        let replay = replay(&[("mask1/drop", &[true; 4])]);
        drop(replay.step(1));
        let y = dropout("drop", &DropoutConfig::new(0.5).init(), Tensor::<1>::ones([4000], &device()));
        assert!(y.into_data().try_to_vec::<f32>().unwrap().contains(&0.0));
    }

    /// Where burn's dropout drops nothing, the replay takes no mask (and agrees with burn on
    /// when that is: the negative control is a dropout that does apply).
    #[test]
    fn an_inactive_dropout_takes_no_mask() {
        let x = Tensor::<1>::from_floats([1.0, 3.0], &device());
        let frozen = burn::module::Module::freeze(DropoutConfig::new(0.5).init());
        let cases = [
            ("p = 0", DropoutConfig::new(0.0).init(), x.clone(), false),
            ("no autodiff", DropoutConfig::new(0.5).init(), Tensor::<1>::from_floats([1.0, 3.0], &Device::flex()), false),
            ("frozen", frozen, x.clone(), false),
            ("active", DropoutConfig::new(0.5).init(), x.clone(), true),
        ];
        let replay = replay(&[("mask1/drop", &[false, false])]);
        for (case, drop, input, active) in cases {
            assert_eq!(applies(&drop, &input), active, "{case}");
            // burn's own forward changes ones of a large tensor exactly when it applies.
            let ones = Tensor::<1>::ones([256], &input.device());
            assert_eq!(bits(drop.forward(ones.clone())) != bits(ones), active, "burn, {case}");
            let before = replayed_masks();
            let _replaying = replay.step(1);
            let y = dropout("drop", &drop, input.clone());
            assert_eq!(replayed_masks() - before, usize::from(active), "{case}");
            assert_eq!(bits(y) == bits(input), !active, "{case}");
        }
    }

    #[test]
    fn a_prefix_names_the_modules_as_the_recorders() {
        let replay = replay(&[("mask1/bert.drop", &[false, true]), ("mask1/bert.drop#2", &[true, false])]).prefix("bert.");
        let drop = DropoutConfig::new(0.5).init();
        let x = || Tensor::<1>::from_floats([1.0, 3.0], &device());
        let _replaying = replay.step(1);
        assert_eq!(dropout("drop", &drop, x()).into_data().try_to_vec::<f32>().unwrap(), [0.0, 6.0]);
        assert_eq!(dropout("drop", &drop, x()).into_data().try_to_vec::<f32>().unwrap(), [2.0, 0.0]);
    }

    #[test]
    fn guards_nest() {
        let (outer, inner) = (replay(&[("mask1/drop", &[true])]), replay(&[("mask1/drop", &[false])]));
        let drop = DropoutConfig::new(0.5).init();
        let x = || Tensor::<1>::from_floats([1.0], &device());
        let values = |t: Tensor<1>| t.into_data().try_to_vec::<f32>().unwrap();
        let _outer = outer.step(1);
        {
            let _inner = inner.step(1);
            assert_eq!(values(dropout("drop", &drop, x())), [0.0]);
        }
        assert_eq!(values(dropout("drop", &drop, x())), [2.0]);
    }

    fn write_recording(name: &str, tensors: &[(&str, Dtype, Vec<usize>, Vec<u8>)], recording: Option<&str>) -> std::path::PathBuf {
        let path = std::env::temp_dir().join(format!("pita-replay-{}-{name}.safetensors", std::process::id()));
        let views: Vec<_> = tensors
            .iter()
            .map(|(name, dtype, shape, data)| (*name, safetensors::tensor::TensorView::new(*dtype, shape.clone(), data).unwrap()))
            .collect();
        let metadata = recording.map(|r| std::collections::HashMap::from([("recording".to_string(), r.to_string())]));
        std::fs::write(&path, safetensors::serialize(views, metadata).unwrap()).unwrap();
        path
    }

    #[test]
    fn reads_the_masks_of_a_recording() {
        let weight = 0.5f32.to_le_bytes().repeat(2);
        let path = write_recording(
            "masks",
            &[
                ("param/fc.weight", Dtype::F32, vec![2], weight),
                ("mask1/drop", Dtype::BOOL, vec![2, 2], vec![1, 0, 0, 1]),
                ("mask1/h.0.attn#2", Dtype::BOOL, vec![1], vec![1]),
                ("mask0/drop", Dtype::F32, vec![1], vec![0; 4]), // outside the convention: left alone
            ],
            Some(RECORDING),
        );
        let replay = Replay::from_file(&path);
        std::fs::remove_file(&path).unwrap();
        let replay = replay.unwrap();
        assert_eq!(replay.len(), 2);
        let _replaying = replay.step(1);
        let x = Tensor::<2>::from_floats([[1.0, 2.0], [3.0, 4.0]], &device());
        let y = dropout("drop", &DropoutConfig::new(0.5).init(), x);
        assert_eq!(y.into_data().try_to_vec::<f32>().unwrap(), [2.0, 0.0, 0.0, 8.0]);
    }

    #[test]
    fn refuses_what_it_cannot_replay() {
        let error = |path: &Path| Replay::from_file(path).unwrap_err().to_string();
        let not_recording = write_recording("plain", &[("mask1/drop", Dtype::BOOL, vec![1], vec![1])], None);
        let float_mask = write_recording("float", &[("mask1/drop", Dtype::F32, vec![1], vec![0; 4])], Some(RECORDING));
        let (plain, float) = (error(&not_recording), error(&float_mask));
        std::fs::remove_file(&not_recording).unwrap();
        std::fs::remove_file(&float_mask).unwrap();
        let not_a_recording = "is not a recording (its metadata has no recording = pita-record/1): masks are replayed from a pita.torch recording";
        assert!(plain.ends_with(not_a_recording), "{plain}");
        assert!(float.ends_with(": mask mask1/drop is F32; a mask is BOOL (true = kept)"), "{float}");
        let sharded = error(Path::new("/tmp/torch-record.safetensors.index.json"));
        assert!(sharded.ends_with("a sharded recording cannot be replayed; record the reference into one .safetensors file"), "{sharded}");
        let missing = Replay::from_file(Path::new("/nonexistent/pita/torch-record.safetensors")).unwrap_err();
        assert!(matches!(missing, Error::Io { .. }), "{missing}");
        let garbage = std::env::temp_dir().join(format!("pita-replay-{}-garbage.safetensors", std::process::id()));
        std::fs::write(&garbage, b"not safetensors").unwrap();
        let result = Replay::from_file(&garbage);
        std::fs::remove_file(&garbage).unwrap();
        assert!(matches!(result, Err(Error::Io { .. })));
        assert!(Replay::from_masks([("act/drop", mask(&[true]))]).is_err());
        assert!(Replay::from_masks([("mask1/drop", TensorData::from([1.0f32]))]).is_err());
    }

    #[test]
    fn mask_names_follow_the_convention() {
        for (name, step) in [("mask1/drop", Some(1)), ("mask12/h.0.attn#3", Some(12)), ("mask999999999/m", Some(MAX_STEP))] {
            assert_eq!(mask_step(name), step, "{name}");
        }
        for name in ["mask0/drop", "mask01/drop", "mask1/", "maskx/drop", "mask1000000000/m", "act/drop", "mask1drop"] {
            assert_eq!(mask_step(name), None, "{name}");
        }
    }
}
