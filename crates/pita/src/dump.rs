//! Dumps: named tensors plus provenance, written as safetensors and the readable JSON form beside
//! it, for `pita compare` (the Python library) to hold against a PyTorch dump: to any path with
//! [`Dump::write_to`], or as `<dir>/burn-<variant>.safetensors` with [`Dump::write`].
//!
//! ```rust
//! use burn::tensor::{Device, Int, Tensor};
//! use pita::dump::Dump;
//!
//! # fn main() -> Result<(), pita::Error> {
//! let device = Device::flex();
//! let mut dump = Dump::builder()
//!     .variant("port")            // the files are burn-port.safetensors and burn-port.json
//!     .experiment("my-model")     // optional provenance
//!     .metadata("batch_size", 4)  // lets compare explain a factor equal to the batch size
//!     .build()?;
//! dump.tensor("loss", Tensor::<1>::from_floats([0.25], &device))?
//!     .tensor("labels", Tensor::<1, Int>::from_ints([0, 2, 1, 1], &device))?;
//! assert_eq!(dump.metadata()["backend"], "Flex"); // from the first tensor's device
//! assert_eq!(dump.get("labels").unwrap().dtype(), "I32"); // Flex's default int dtype
//! # let dir = std::env::temp_dir().join(format!("pita-doc-dump-{}", std::process::id()));
//! let path = dump.write(&dir)?;
//! assert!(path.ends_with("burn-port.safetensors"));
//!
//! // Without a variant: a path of your choosing (the JSON form goes beside it, `out.json`).
//! let mut plain = Dump::builder().build()?;
//! plain.tensor("loss", Tensor::<1>::from_floats([0.25], &device))?;
//! plain.write_to(&dir.join("out.safetensors"))?;
//! assert!(dir.join("out.json").exists());
//! # std::fs::remove_dir_all(&dir).unwrap();
//! # Ok(())
//! # }
//! ```
//!
//! Every tensor keeps its dtype (F64, F32, F16, BF16, I64 … U8, BOOL): the safetensors file holds
//! its little-endian bytes, the JSON form its values (and, for floats, its bits). The format
//! (names, dtypes, metadata keys, edge cases) is specified in docs/dump-format.md in the pita
//! repository; the Python reader `pita.dump` is the other half of it.
//!
//! Provenance recorded in every dump: `format`, `framework` (`burn`), `framework_version` (see
//! [`DumpBuilder::framework_version`]), `backend` (see [`backend_name`]), `pita_version` and
//! `burn_requirement`; `variant`, `experiment` and `input_sha256` when given.

use std::collections::{BTreeMap, HashMap};
use std::fs;
use std::io::{self, Write};
use std::path::{Path, PathBuf};

use burn::tensor::kind::Basic;
use burn::tensor::{bf16, f16, BoolStore, DType, Device, Tensor, TensorData};
use safetensors::tensor::Dtype;
use serde_json::{json, Map, Value};

use crate::Error;

/// Version tag of the dump format, stored in the `format` metadata key.
pub const FORMAT: &str = "pita-dump/1";

/// This crate's version, stored in the `pita_version` metadata key.
pub const PITA_VERSION: &str = env!("CARGO_PKG_VERSION");

/// The burn versions this crate was written against (its Cargo.toml's requirement), stored in
/// the `burn_requirement` metadata key.
pub const BURN_REQUIREMENT: &str = "^0.22.1";

/// The burn version found in the Cargo.lock of the build that compiled this crate, or
/// `"unknown"`. Best-effort: the build script walks up from its output folder (inside the
/// target directory), then from the folder cargo was invoked in, to the first Cargo.lock that
/// lists pita, so a target directory outside the project (`CARGO_TARGET_DIR`) is found too; cargo
/// invoked from outside the project with `--manifest-path` and such a target directory finds
/// none. It is the default of the
/// `framework_version` key; [`DumpBuilder::framework_version`] states it exactly.
pub const LOCKED_BURN_VERSION: &str = env!("PITA_RESOLVED_BURN_VERSION");

/// The most elements the JSON form is written for: beyond, [`Dump::write`] writes the
/// safetensors form only (pita's JSON reader is meant for small, readable dumps).
pub const MAX_JSON_ELEMENTS: usize = 500_000;

/// Why [`Dump::write_to`] refuses a `.json` path for a dump of more than [`MAX_JSON_ELEMENTS`].
const JSON_TOO_LARGE: &str = "the JSON form holds at most 500000 elements: write .safetensors";

/// Keys the dump sets itself or through a builder method of their own.
const RESERVED: [(&str, &str); 9] = [
    ("format", "the dump sets it"),
    ("framework", "the dump sets it"),
    ("pita_version", "the dump sets it"),
    ("burn_requirement", "the dump sets it"),
    ("framework_version", "use DumpBuilder::framework_version"),
    ("backend", "use DumpBuilder::backend or DumpBuilder::device"),
    ("experiment", "use DumpBuilder::experiment"),
    ("variant", "use DumpBuilder::variant"),
    ("input_sha256", "use DumpBuilder::input_sha256"),
];

/// A readable name for the backend `device` runs on, derived from burn's `Debug` form of it:
/// `Flex`, `NdArray`, `Autodiff<Flex>`, `Autodiff<Flex, checkpointing Balanced>`. A device whose
/// form it does not know is named as burn prints it, less the `Device<…>` wrapper.
///
/// ```rust
/// use burn::tensor::Device;
/// use pita::dump::backend_name;
///
/// assert_eq!(backend_name(&Device::flex()), "Flex");
/// assert_eq!(backend_name(&Device::flex().autodiff()), "Autodiff<Flex>");
/// ```
pub fn backend_name(device: &Device) -> String {
    let base = device.clone().without_autodiff();
    let inner = short_backend(unwrap_device(&format!("{base:?}")));
    if !device.is_autodiff() {
        return inner;
    }
    // burn prints an autodiff device as `Autodiff { device: …, checkpointing: Disabled }`.
    let full = format!("{device:?}");
    let checkpointing = full
        .rsplit_once("checkpointing: ")
        .map(|(_, rest)| rest.trim_end_matches(['>', '}', ' ']))
        .filter(|strategy| !strategy.is_empty() && *strategy != "Disabled");
    match checkpointing {
        Some(strategy) => format!("Autodiff<{inner}, checkpointing {strategy}>"),
        None => format!("Autodiff<{inner}>"),
    }
}

fn unwrap_device(debug: &str) -> &str {
    debug.strip_prefix("Device<").and_then(|rest| rest.strip_suffix('>')).unwrap_or(debug)
}

/// `Flex(Cpu)` → `Flex`; `Cube(Cuda(…))` → `Cuda(…)`; anything else as it is.
fn short_backend(debug: &str) -> String {
    if let Some(runtime) = debug.strip_prefix("Cube(").and_then(|rest| rest.strip_suffix(')')) {
        return short_backend(runtime);
    }
    match debug.strip_suffix("(Cpu)") {
        Some(name) if !name.is_empty() && name.chars().all(|c| c.is_ascii_alphanumeric()) => name.to_string(),
        _ => debug.to_string(),
    }
}

/// Sets up a [`Dump`]: its provenance, and the variant that names the files [`Dump::write`]
/// writes. Made by [`Dump::builder`].
#[derive(Debug, Clone, Default)]
#[must_use = "a builder does nothing until `build` is called"]
pub struct DumpBuilder {
    variant: Option<String>,
    experiment: Option<String>,
    input_sha256: Option<String>,
    backend: Option<String>,
    framework_version: Option<String>,
    metadata: BTreeMap<String, String>,
    reserved: Option<(String, &'static str)>,
}

impl DumpBuilder {
    /// The variant: the `variant` key, and the names of the files [`Dump::write`] writes,
    /// `burn-<variant>.safetensors` and `.json`. Usually the name of the run (`port`, `fixed`,
    /// `step1`). Optional: [`Dump::write_to`] writes to a path of your choosing.
    pub fn variant(mut self, variant: impl Into<String>) -> Self {
        self.variant = Some(variant.into());
        self
    }

    /// The `experiment` key: which program or model the dump belongs to.
    pub fn experiment(mut self, experiment: impl Into<String>) -> Self {
        self.experiment = Some(experiment.into());
        self
    }

    /// The `input_sha256` key: a hash of the inputs both sides were fed. `pita compare` refuses
    /// two dumps whose hashes differ; a dump without one is compared without that check.
    pub fn input_sha256(mut self, sha256: impl Into<String>) -> Self {
        self.input_sha256 = Some(sha256.into());
        self
    }

    /// The `backend` key, as given. Without this or [`device`](Self::device), the dump names
    /// the backend of the first tensor added with [`Dump::tensor`] ([`backend_name`]), or
    /// `unknown` if it holds none.
    pub fn backend(mut self, backend: impl Into<String>) -> Self {
        self.backend = Some(backend.into());
        self
    }

    /// The `backend` key, named after `device` ([`backend_name`]): for the device the program
    /// ran on when the first tensor dumped lives elsewhere (gradients are not on an autodiff
    /// device).
    pub fn device(self, device: &Device) -> Self {
        self.backend(backend_name(device))
    }

    /// The `framework_version` key: the burn version that ran. Without it, the dump records
    /// [`LOCKED_BURN_VERSION`], found at build time on a best-effort basis, or `unknown`.
    pub fn framework_version(mut self, version: impl Into<String>) -> Self {
        self.framework_version = Some(version.into());
        self
    }

    /// Any other metadata entry, e.g. `batch_size` (ASCII digits), which compare uses to explain
    /// a gradient scaled by the batch size. Keys with a method of their own, and the keys the
    /// dump sets itself, make [`build`](Self::build) fail with [`Error::ReservedKey`].
    pub fn metadata(mut self, key: impl Into<String>, value: impl ToString) -> Self {
        let key = key.into();
        match reserved(&key) {
            Some(hint) => {
                self.reserved.get_or_insert((key, hint));
            }
            None => {
                self.metadata.insert(key, value.to_string());
            }
        }
        self
    }

    /// The empty dump. Fails with a variant that cannot name a file, or when
    /// [`metadata`](Self::metadata) was given a reserved key.
    pub fn build(self) -> Result<Dump, Error> {
        if let Some((key, hint)) = self.reserved {
            return Err(Error::ReservedKey { key, hint });
        }
        if let Some(variant) = &self.variant {
            check_variant(variant)?;
        }
        let mut metadata = self.metadata;
        let version = self.framework_version.unwrap_or_else(|| LOCKED_BURN_VERSION.to_string());
        for (key, value) in [
            ("format", Some(FORMAT.to_string())),
            ("framework", Some("burn".to_string())),
            ("framework_version", Some(version)),
            ("pita_version", Some(PITA_VERSION.to_string())),
            ("burn_requirement", Some(BURN_REQUIREMENT.to_string())),
            ("variant", self.variant),
            ("experiment", self.experiment),
            ("input_sha256", self.input_sha256),
            ("backend", self.backend),
        ] {
            if let Some(value) = value {
                metadata.insert(key.to_string(), value);
            }
        }
        Ok(Dump { metadata, tensors: BTreeMap::new() })
    }
}

fn reserved(key: &str) -> Option<&'static str> {
    RESERVED.iter().find(|(reserved, _)| *reserved == key).map(|(_, hint)| *hint)
}

fn check_variant(variant: &str) -> Result<(), Error> {
    let refuse = |reason| Err(Error::InvalidVariant { variant: variant.to_string(), reason });
    if variant.is_empty() {
        return refuse("empty");
    }
    if variant == "." || variant == ".." || variant.contains(['/', '\\']) {
        return refuse("it names the files, so it cannot hold a path");
    }
    if !printable(variant) {
        return refuse("it holds characters that cannot be printed on one line");
    }
    Ok(())
}

/// What pita's readers print on one report line: no control characters, no whitespace but the
/// space. (Python's `str.isprintable`, which the reader applies to tensor names, also refuses
/// the Unicode format characters; those are not checked here.)
fn printable(text: &str) -> bool {
    text.chars().all(|c| !c.is_control() && (c == ' ' || !c.is_whitespace()))
}

/// Named tensors and the provenance every dump records. Start with [`Dump::builder`], add
/// tensors with [`tensor`](Self::tensor) or [`data`](Self::data), then
/// [`write_to`](Self::write_to) a path or [`write`](Self::write) to a folder.
#[derive(Debug, Clone)]
pub struct Dump {
    metadata: BTreeMap<String, String>,
    tensors: BTreeMap<String, DumpTensor>,
}

impl Dump {
    /// A builder: set any provenance (and the variant, to [`write`](Self::write) to a folder),
    /// then [`DumpBuilder::build`].
    pub fn builder() -> DumpBuilder {
        DumpBuilder::default()
    }

    /// Adds `tensor` (float, int or bool) under `name`, in its own dtype. The first tensor
    /// added names the backend, unless the builder set it.
    ///
    /// Cost: reads the tensor back from its device, a device sync and an O(n) copy.
    ///
    /// Fails if the dump already holds `name`, if the name cannot be printed on one line or is
    /// `__metadata__`, if the device cannot deliver the data, or for a quantized tensor.
    pub fn tensor<const D: usize, K: Basic>(&mut self, name: &str, tensor: Tensor<D, K>) -> Result<&mut Self, Error> {
        check_name(name, &self.tensors)?;
        let device = tensor.device();
        let data = tensor.try_into_data().map_err(|e| Error::Read { name: name.to_string(), message: e.to_string() })?;
        self.data(name, data)?;
        self.name_backend(&device);
        Ok(self)
    }

    /// Names the backend after `device`, unless the builder or an earlier tensor did.
    pub(crate) fn name_backend(&mut self, device: &Device) {
        if !self.metadata.contains_key("backend") {
            self.metadata.insert("backend".to_string(), backend_name(device));
        }
    }

    /// Adds a converted tensor under `name`; fails as [`data`](Self::data) does.
    pub(crate) fn insert(&mut self, name: &str, tensor: DumpTensor) -> Result<(), Error> {
        check_name(name, &self.tensors)?;
        self.tensors.insert(name.to_string(), tensor);
        Ok(())
    }

    /// The bytes of the tensors held.
    pub(crate) fn tensor_bytes(&self) -> usize {
        self.tensors.values().map(|t| t.bytes.len()).sum()
    }

    /// Drops every tensor, keeping the metadata.
    pub(crate) fn clear_tensors(&mut self) {
        self.tensors.clear();
    }

    /// Adds host data under `name`, in its own dtype, e.g. `TensorData::new(vec![0.5f32], [1])`.
    /// Free of device work; names no backend. Fails as [`tensor`](Self::tensor) does.
    pub fn data(&mut self, name: &str, data: TensorData) -> Result<&mut Self, Error> {
        check_name(name, &self.tensors)?;
        let tensor = DumpTensor::from_data(name, data)?;
        self.tensors.insert(name.to_string(), tensor);
        Ok(self)
    }

    /// Sets a metadata entry after the dump was built (a figure known only once the tensors
    /// are). Reserved keys are refused as in [`DumpBuilder::metadata`].
    pub fn set_metadata(&mut self, key: &str, value: impl ToString) -> Result<&mut Self, Error> {
        if let Some(hint) = reserved(key) {
            return Err(Error::ReservedKey { key: key.to_string(), hint });
        }
        self.metadata.insert(key.to_string(), value.to_string());
        Ok(self)
    }

    /// The metadata as it will be written (`backend` appears once a tensor named it).
    pub fn metadata(&self) -> &BTreeMap<String, String> {
        &self.metadata
    }

    /// The tensor named `name`.
    pub fn get(&self, name: &str) -> Option<&DumpTensor> {
        self.tensors.get(name)
    }

    /// The tensors' names, sorted.
    pub fn names(&self) -> impl Iterator<Item = &str> {
        self.tensors.keys().map(String::as_str)
    }

    /// How many tensors the dump holds.
    pub fn len(&self) -> usize {
        self.tensors.len()
    }

    /// Whether the dump holds no tensor.
    pub fn is_empty(&self) -> bool {
        self.tensors.is_empty()
    }

    /// The file stem [`write`](Self::write) names its files by, `burn-<variant>`; None for a
    /// dump built without a variant.
    pub fn stem(&self) -> Option<String> {
        self.metadata.get("variant").map(|variant| format!("{}-{variant}", self.metadata["framework"]))
    }

    /// Writes `<dir>/burn-<variant>.safetensors` and its JSON form beside it, as
    /// [`write_to`](Self::write_to) does. Creates `dir`. Returns the safetensors path. Fails with
    /// [`Error::MissingVariant`] for a dump built without a variant.
    pub fn write(&self, dir: &Path) -> Result<PathBuf, Error> {
        let stem = self.stem().ok_or(Error::MissingVariant)?;
        self.write_to(&dir.join(format!("{stem}.safetensors")))
    }

    /// Writes the dump to `path`, in the form its extension names (any case): `.safetensors`,
    /// with the JSON form beside it (`path` with the extension `json`) up to
    /// [`MAX_JSON_ELEMENTS`] elements in all, or `.json`, the JSON form alone. The JSON file
    /// beside a `.safetensors` path is always this dump's: when the dump is too large for it, or
    /// writing it fails (then the error is returned), a JSON file left there by an earlier dump
    /// is removed. Each file is written atomically: to a hidden temporary file
    /// beside it, flushed, then renamed. Creates the folder. Returns `path`.
    ///
    /// Fails with [`Error::InvalidPath`] for another extension or a `.json` path for a dump
    /// too large for the JSON form, and as the writes fail.
    pub fn write_to(&self, path: &Path) -> Result<PathBuf, Error> {
        let extension = path.extension().and_then(|e| e.to_str()).map(str::to_ascii_lowercase);
        let safetensors = match extension.as_deref() {
            Some("safetensors") => true,
            Some("json") => false,
            _ => return Err(Error::InvalidPath { path: path.to_path_buf(), reason: "a dump is written as .safetensors or .json" }),
        };
        if let Some(dir) = path.parent().filter(|dir| !dir.as_os_str().is_empty()) {
            fs::create_dir_all(dir).map_err(|e| Error::io(dir, e))?;
        }
        let fits_json = self.tensors.values().map(DumpTensor::len).sum::<usize>() <= MAX_JSON_ELEMENTS;
        if !safetensors {
            if !fits_json {
                return Err(Error::InvalidPath { path: path.to_path_buf(), reason: JSON_TOO_LARGE });
            }
            write_atomically(path, &self.json_bytes()?)?;
            return Ok(path.to_path_buf());
        }
        self.write_safetensors(path)?;
        let json = path.with_extension("json");
        let written = if fits_json { self.json_bytes().and_then(|bytes| write_atomically(&json, &bytes)) } else { Ok(()) };
        if !fits_json || written.is_err() {
            // The JSON form beside `path` is this dump's or none: one left by an earlier dump holds other tensors.
            match fs::remove_file(&json) {
                Ok(()) => {}
                Err(e) if e.kind() == io::ErrorKind::NotFound => {}
                Err(e) => return Err(Error::io(&json, e)),
            }
        }
        written.map(|()| path.to_path_buf())
    }

    /// The safetensors form: every tensor's little-endian bytes under its dtype's name, the
    /// metadata in `__metadata__`.
    pub fn safetensors_bytes(&self) -> Result<Vec<u8>, Error> {
        let (header, order) = self.safetensors_layout()?;
        let mut bytes = Vec::with_capacity(header.len() + self.tensor_bytes());
        bytes.extend_from_slice(&header);
        for tensor in order {
            bytes.extend_from_slice(&tensor.bytes);
        }
        Ok(bytes)
    }

    /// Writes the safetensors form to `path` atomically, tensor by tensor: no copy of the whole
    /// file is made in memory (a shard of a recording is written so).
    pub(crate) fn write_safetensors(&self, path: &Path) -> Result<(), Error> {
        let (header, order) = self.safetensors_layout()?;
        write_atomically_with(path, |file| {
            let mut out = io::BufWriter::with_capacity(1 << 20, file);
            out.write_all(&header)?;
            for tensor in order {
                out.write_all(&tensor.bytes)?;
            }
            out.flush()
        })
    }

    /// The safetensors file's header (length, JSON, padding) and the tensors in the order their
    /// bytes follow it: the safetensors crate's layout (data by descending dtype alignment, then
    /// name), with a header in a fixed order: `__metadata__` sorted by key, then the tensors by
    /// name (the crate takes the metadata as a `HashMap`, whose order changes from run to run).
    fn safetensors_layout(&self) -> Result<(Vec<u8>, Vec<&DumpTensor>), Error> {
        let mut order: Vec<(&String, &DumpTensor)> = self.tensors.iter().collect();
        order.sort_by(|(left_name, left), (right_name, right)| right.dtype.cmp(&left.dtype).then(left_name.cmp(right_name)));
        let mut offsets = HashMap::new();
        let mut offset = 0;
        for (name, tensor) in &order {
            offsets.insert(name.as_str(), (offset, offset + tensor.bytes.len()));
            offset += tensor.bytes.len();
        }
        // Maps filled in sorted order: sorted whether serde_json keeps insertion order or sorts.
        let mut header = Map::new();
        let metadata: Map<String, Value> = self.written_metadata().into_iter().map(|(k, v)| (k, Value::String(v))).collect();
        header.insert("__metadata__".to_string(), Value::Object(metadata));
        for (name, tensor) in &self.tensors {
            let (start, end) = offsets[name.as_str()];
            header.insert(name.clone(), json!({"dtype": tensor.dtype(), "shape": tensor.shape, "data_offsets": [start, end]}));
        }
        let mut text = serde_json::to_string(&Value::Object(header)).map_err(|e| Error::Serialize { message: e.to_string() })?;
        while text.len() % 8 != 0 {
            text.push(' '); // safetensors pads the header to 8 bytes, so the data stays aligned
        }
        let mut bytes = Vec::with_capacity(8 + text.len());
        bytes.extend_from_slice(&(text.len() as u64).to_le_bytes());
        bytes.extend_from_slice(text.as_bytes());
        Ok((bytes, order.into_iter().map(|(_, tensor)| tensor).collect()))
    }

    /// The readable JSON form (docs/dump-format.md): per tensor its dtype, shape and values,
    /// and for floats the hex bits of each value.
    pub fn json_bytes(&self) -> Result<Vec<u8>, Error> {
        let tensors: Map<String, Value> = self.tensors.iter().map(|(name, t)| (name.clone(), t.json())).collect();
        let document = json!({ "format": FORMAT, "metadata": self.written_metadata(), "tensors": tensors });
        let mut bytes = serde_json::to_vec_pretty(&document).map_err(|e| Error::Serialize { message: e.to_string() })?;
        bytes.push(b'\n');
        Ok(bytes)
    }

    pub(crate) fn written_metadata(&self) -> BTreeMap<String, String> {
        let mut metadata = self.metadata.clone();
        metadata.entry("backend".to_string()).or_insert_with(|| "unknown".to_string());
        metadata
    }
}

fn check_name(name: &str, tensors: &BTreeMap<String, DumpTensor>) -> Result<(), Error> {
    let invalid = |reason| Err(Error::InvalidName { name: name.to_string(), reason });
    if name == "__metadata__" {
        return invalid("reserved for the metadata in safetensors");
    }
    if !printable(name) {
        return invalid("holds characters that cannot be printed on one line");
    }
    if tensors.contains_key(name) {
        return Err(Error::DuplicateTensor { name: name.to_string() });
    }
    Ok(())
}

/// One tensor of a dump: its dtype, shape and little-endian bytes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DumpTensor {
    dtype: Dtype,
    shape: Vec<usize>,
    bytes: Vec<u8>,
}

impl DumpTensor {
    /// The dtype's safetensors name: `F64 F32 F16 BF16 I64 I32 I16 I8 U64 U32 U16 U8 BOOL`.
    pub fn dtype(&self) -> &'static str {
        match self.dtype {
            Dtype::F64 => "F64",
            Dtype::F32 => "F32",
            Dtype::F16 => "F16",
            Dtype::BF16 => "BF16",
            Dtype::I64 => "I64",
            Dtype::I32 => "I32",
            Dtype::I16 => "I16",
            Dtype::I8 => "I8",
            Dtype::U64 => "U64",
            Dtype::U32 => "U32",
            Dtype::U16 => "U16",
            Dtype::U8 => "U8",
            _ => "BOOL", // `from_data` makes no other dtype
        }
    }

    /// The shape, row-major.
    pub fn shape(&self) -> &[usize] {
        &self.shape
    }

    /// The elements' little-endian bytes, as the safetensors file holds them (BOOL: one byte
    /// each, 0 or 1).
    pub fn bytes(&self) -> &[u8] {
        &self.bytes
    }

    /// The number of elements.
    pub fn len(&self) -> usize {
        self.shape.iter().product()
    }

    /// Whether the tensor has no elements (a 0 in its shape).
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    pub(crate) fn from_data(name: &str, data: TensorData) -> Result<Self, Error> {
        let read = |e: burn::tensor::DataError| Error::Read { name: name.to_string(), message: e.to_string() };
        let shape = data.shape().as_slice().to_vec();
        if let Some((dtype, bytes)) = native_little_endian(&data) {
            return Ok(DumpTensor { dtype, shape, bytes });
        }
        fn le<E: Copy, const N: usize>(values: &[E], bytes: impl Fn(E) -> [u8; N]) -> Vec<u8> {
            values.iter().flat_map(|&v| bytes(v)).collect()
        }
        let (dtype, bytes) = match data.dtype() {
            DType::F64 => (Dtype::F64, le(data.as_slice::<f64>().map_err(read)?, f64::to_le_bytes)),
            DType::F32 => (Dtype::F32, le(data.as_slice::<f32>().map_err(read)?, f32::to_le_bytes)),
            DType::Flex32 => {
                let data = data.try_cast(DType::F32).map_err(read)?;
                (Dtype::F32, le(data.as_slice::<f32>().map_err(read)?, f32::to_le_bytes))
            }
            DType::F16 => (Dtype::F16, le(data.as_slice::<f16>().map_err(read)?, |v| v.to_bits().to_le_bytes())),
            DType::BF16 => (Dtype::BF16, le(data.as_slice::<bf16>().map_err(read)?, |v| v.to_bits().to_le_bytes())),
            DType::I64 => (Dtype::I64, le(data.as_slice::<i64>().map_err(read)?, i64::to_le_bytes)),
            DType::I32 => (Dtype::I32, le(data.as_slice::<i32>().map_err(read)?, i32::to_le_bytes)),
            DType::I16 => (Dtype::I16, le(data.as_slice::<i16>().map_err(read)?, i16::to_le_bytes)),
            DType::I8 => (Dtype::I8, le(data.as_slice::<i8>().map_err(read)?, i8::to_le_bytes)),
            DType::U64 => (Dtype::U64, le(data.as_slice::<u64>().map_err(read)?, u64::to_le_bytes)),
            DType::U32 => (Dtype::U32, le(data.as_slice::<u32>().map_err(read)?, u32::to_le_bytes)),
            DType::U16 => (Dtype::U16, le(data.as_slice::<u16>().map_err(read)?, u16::to_le_bytes)),
            DType::U8 => (Dtype::U8, data.as_slice::<u8>().map_err(read)?.to_vec()),
            DType::Bool(BoolStore::Native) => {
                (Dtype::BOOL, le(data.as_slice::<bool>().map_err(read)?, |v| [u8::from(v)]))
            }
            DType::Bool(BoolStore::U8) => (Dtype::BOOL, le(data.as_slice::<u8>().map_err(read)?, |v| [u8::from(v != 0)])),
            DType::Bool(BoolStore::U32) => (Dtype::BOOL, le(data.as_slice::<u32>().map_err(read)?, |v| [u8::from(v != 0)])),
            other => return Err(Error::UnsupportedDtype { name: name.to_string(), dtype: format!("{other:?}") }),
        };
        Ok(DumpTensor { dtype, shape, bytes })
    }

    /// The JSON form's entry: floats with values and bits, integers and bools with values.
    fn json(&self) -> Value {
        let chunks = |n: usize| self.bytes.chunks_exact(n);
        let (values, bits): (Vec<Value>, Option<Vec<String>>) = match self.dtype {
            Dtype::F64 => {
                let raw: Vec<u64> = chunks(8).map(|c| u64::from_le_bytes(c.try_into().unwrap())).collect();
                let values = raw.iter().map(|&b| float_value(f64::from_bits(b), Value::from)).collect();
                (values, Some(raw.iter().map(|b| format!("{b:016x}")).collect()))
            }
            Dtype::F32 => {
                let raw: Vec<u32> = chunks(4).map(|c| u32::from_le_bytes(c.try_into().unwrap())).collect();
                let values = raw.iter().map(|&b| float_value(f32::from_bits(b) as f64, |_| f32_value(f32::from_bits(b)))).collect();
                (values, Some(raw.iter().map(|b| format!("{b:08x}")).collect()))
            }
            Dtype::F16 | Dtype::BF16 => {
                let half = if self.dtype == Dtype::F16 { Half::F16 } else { Half::BF16 };
                let raw: Vec<u16> = chunks(2).map(|c| u16::from_le_bytes(c.try_into().unwrap())).collect();
                let values = raw.iter().map(|&b| float_value(half.value(b), |_| Value::from(half.shortest(b)))).collect();
                (values, Some(raw.iter().map(|b| format!("{b:04x}")).collect()))
            }
            Dtype::I64 => (chunks(8).map(|c| Value::from(i64::from_le_bytes(c.try_into().unwrap()))).collect(), None),
            Dtype::I32 => (chunks(4).map(|c| Value::from(i32::from_le_bytes(c.try_into().unwrap()))).collect(), None),
            Dtype::I16 => (chunks(2).map(|c| Value::from(i16::from_le_bytes(c.try_into().unwrap()))).collect(), None),
            Dtype::I8 => (self.bytes.iter().map(|&b| Value::from(b as i8)).collect(), None),
            Dtype::U64 => (chunks(8).map(|c| Value::from(u64::from_le_bytes(c.try_into().unwrap()))).collect(), None),
            Dtype::U32 => (chunks(4).map(|c| Value::from(u32::from_le_bytes(c.try_into().unwrap()))).collect(), None),
            Dtype::U16 => (chunks(2).map(|c| Value::from(u16::from_le_bytes(c.try_into().unwrap()))).collect(), None),
            Dtype::U8 => (self.bytes.iter().map(|&b| Value::from(b)).collect(), None),
            _ => (self.bytes.iter().map(|&b| Value::from(b != 0)).collect(), None),
        };
        let mut entry = json!({ "dtype": self.dtype(), "shape": self.shape, "values": values });
        if let Some(bits) = bits {
            entry["bits"] = json!(bits);
        }
        entry
    }
}

/// A float's JSON value: `"NaN"`, `"Infinity"`, `"-Infinity"`, else `finite(value)`.
fn float_value(value: f64, finite: impl Fn(f64) -> Value) -> Value {
    if value.is_nan() {
        json!("NaN")
    } else if value.is_infinite() {
        json!(if value > 0.0 { "Infinity" } else { "-Infinity" })
    } else {
        finite(value)
    }
}

/// The shortest decimal that reads back as the same f32, as numpy's `str` prints it (ties
/// between two shortest decimals go to the correctly rounded one, where Rust's `{:?}` may pick
/// the other).
fn f32_value(value: f32) -> Value {
    if value == 0.0 {
        return Value::from(f64::from(value));
    }
    let shortest = format!("{value:e}"); // Rust's shortest round-trip digits
    let digits = shortest.split('e').next().unwrap_or("").chars().filter(char::is_ascii_digit).count();
    // The correctly rounded decimal of as many digits wins when it reads back (a tie of two).
    let nearest: f64 = format!("{:.*e}", digits.max(1) - 1, f64::from(value)).parse().expect("a formatted float parses");
    let value64 = if nearest as f32 == value { nearest } else { shortest.parse().expect("a formatted float parses") };
    Value::from(value64)
}

/// The float64 nearest the shortest decimal for which `reads_back` holds: the correctly rounded
/// decimal of `x` with the fewest digits, and with `neighbours` also the decimals one unit in the
/// last digit beside it, the closest to `x` winning (Dragon4's choice, numpy's `str`). `x` is
/// finite and nonzero.
fn shortest_decimal(x: f64, neighbours: bool, reads_back: impl Fn(f64) -> bool) -> f64 {
    for digits in 1..=17usize {
        let text = format!("{:.*e}", digits - 1, x);
        let nearest: f64 = text.parse().expect("a formatted float parses");
        let mut best = reads_back(nearest).then_some(nearest);
        if neighbours {
            let (mantissa, exponent) = text.split_once('e').expect("exponent form");
            let sign = if mantissa.starts_with('-') { "-" } else { "" };
            let units: u64 = mantissa.chars().filter(char::is_ascii_digit).collect::<String>().parse().expect("digits");
            let exponent: i64 = exponent.parse::<i64>().expect("exponent") - (digits as i64 - 1);
            for other in [units - 1, units + 1] {
                let candidate: f64 = format!("{sign}{other}e{exponent}").parse().expect("a decimal parses");
                let closer = best.is_none_or(|b| (candidate - x).abs() < (b - x).abs());
                if other > 0 && closer && reads_back(candidate) {
                    best = Some(candidate);
                }
            }
        }
        if let Some(best) = best {
            return best;
        }
    }
    x
}

/// The two 16-bit float formats, which have no shortest-decimal printer of their own.
#[derive(Clone, Copy, PartialEq)]
enum Half {
    F16,
    BF16,
}

impl Half {
    /// The exact value of the bit pattern.
    fn value(self, bits: u16) -> f64 {
        match self {
            Half::F16 => f16::from_bits(bits).to_f64(),
            Half::BF16 => f32::from_bits(u32::from(bits) << 16) as f64,
        }
    }

    /// Whether `candidate` (a float64) rounds to `bits` in this format, to nearest with ties to
    /// even, as `pita.dump` rounds a JSON value (`pita.dtypes.from_float64`).
    fn rounds_to(self, candidate: f64, bits: u16) -> bool {
        let magnitude = bits & 0x7fff;
        let x = self.value(magnitude);
        if magnitude == 0 || candidate == 0.0 || (candidate < 0.0) != (bits & 0x8000 != 0) {
            return candidate == 0.0 && magnitude == 0;
        }
        let below = self.value(magnitude - 1);
        let above = self.value(magnitude + 1);
        let above = if above.is_finite() { above } else { x + (x - below) }; // past the largest finite value
        let (low, high, c) = ((x + below) / 2.0, (x + above) / 2.0, candidate.abs());
        let even = magnitude.is_multiple_of(2);
        (low < c && c < high) || (even && (c == low || c == high))
    }

    /// The shortest decimal that reads back as `bits` (finite). BF16 takes the correctly rounded
    /// decimal of the fewest digits that round-trips, as `pita.dump` writes it (`_bf16_readable`);
    /// F16 also tries the decimals beside it, as numpy's `str` prints a float16.
    fn shortest(self, bits: u16) -> f64 {
        let x = self.value(bits);
        if x == 0.0 {
            return x;
        }
        shortest_decimal(x, self == Half::F16, |candidate| self.rounds_to(candidate, bits))
    }
}

/// The size of a shard unless told: [`Recorder::shard_bytes`](crate::record::Recorder::shard_bytes).
pub const SHARD_BYTES: usize = 256 << 20;

/// A dump written shard by shard as its tensors arrive (docs/recording.md, "Sharded
/// recordings"), to be read as one by `pita.dump.read_dump`: the tensors are held until the next
/// would take them past the shard size, then written as `<stem>-00001.safetensors`, … beside
/// `path`, and freed; [`finish`](Self::finish) writes the last shard and the index
/// `<path>.index.json`, or `path` itself (and its JSON form) when everything fit in one shard.
/// Each file is written under a temporary name and renamed; on an error, and when dropped
/// unfinished, every file it wrote is removed. The files of an earlier dump at `path` are removed
/// once this one is complete.
pub(crate) struct Shards {
    path: PathBuf,
    limit: usize,
    /// The tensors held, under the metadata every shard carries.
    current: Dump,
    written: Vec<PathBuf>,
    weight_map: BTreeMap<String, String>,
    /// Why a write failed: the files are gone and nothing more is written.
    failed: Option<String>,
    finished: bool,
}

impl Shards {
    /// A dump to write at `path` (`.safetensors`, any case) with `metadata` in every shard; makes
    /// the folder.
    pub(crate) fn new(path: &Path, limit: usize, current: Dump) -> Result<Self, Error> {
        let extension = path.extension().and_then(|e| e.to_str()).map(str::to_ascii_lowercase);
        if extension.as_deref() != Some("safetensors") || path.file_stem().is_none_or(|stem| stem.is_empty()) {
            return Err(Error::InvalidPath { path: path.to_path_buf(), reason: "a recording is written as <name>.safetensors" });
        }
        if let Some(dir) = path.parent().filter(|dir| !dir.as_os_str().is_empty()) {
            fs::create_dir_all(dir).map_err(|e| Error::io(dir, e))?;
        }
        Ok(Shards { path: path.to_path_buf(), limit, current, written: Vec::new(), weight_map: BTreeMap::new(), failed: None, finished: false })
    }

    pub(crate) fn set_limit(&mut self, limit: usize) {
        self.limit = limit;
    }

    /// The dump the shards are written from: its metadata goes into each shard.
    pub(crate) fn current(&mut self) -> &mut Dump {
        &mut self.current
    }

    /// Adds `tensor`, writing the tensors held first if it would take them past the shard size.
    pub(crate) fn push(&mut self, name: &str, tensor: DumpTensor) -> Result<(), Error> {
        self.check()?;
        if !self.current.is_empty() && self.current.tensor_bytes() + tensor.bytes.len() > self.limit {
            self.write_shard()?;
        }
        self.current.insert(name, tensor)
    }

    fn check(&self) -> Result<(), Error> {
        match &self.failed {
            Some(why) => Err(Error::Recording { message: format!("{}: an earlier write failed ({why}); nothing of it is kept", self.path.display()) }),
            None => Ok(()),
        }
    }

    fn stem(&self) -> String {
        let name = self.path.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
        name[..name.len() - ".safetensors".len()].to_string()
    }

    fn index_path(&self) -> PathBuf {
        let name = self.path.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
        self.path.with_file_name(format!("{name}.index.json"))
    }

    fn write_shard(&mut self) -> Result<(), Error> {
        let name = format!("{}-{:05}.safetensors", self.stem(), self.written.len() + 1);
        let path = self.path.with_file_name(&name);
        let written = self.current.write_safetensors(&path);
        self.fail_on(written)?;
        self.written.push(path);
        self.weight_map.extend(self.current.names().map(|tensor| (tensor.to_string(), name.clone())));
        self.current.clear_tensors();
        Ok(())
    }

    /// On an error, removes every file written and refuses to write more.
    fn fail_on<T>(&mut self, result: Result<T, Error>) -> Result<T, Error> {
        if let Err(error) = &result {
            self.failed = Some(error.to_string());
            self.remove_written();
        }
        result
    }

    fn remove_written(&mut self) {
        for path in self.written.drain(..) {
            let _ = fs::remove_file(path);
        }
    }

    /// Writes what remains with `metadata` (every key of the recording) added: `path` itself
    /// when nothing was written yet, else the last shard and the index. Returns the path written.
    pub(crate) fn finish(mut self, metadata: &[(&str, String)]) -> Result<PathBuf, Error> {
        self.check()?;
        if !self.written.is_empty() && !self.current.is_empty() {
            self.write_shard()?; // the shards carry the metadata known from the start only
        }
        for (key, value) in metadata {
            self.current.set_metadata(key, value)?;
        }
        let written = if self.written.is_empty() { self.current.write_to(&self.path) } else { self.write_index() };
        let path = self.fail_on(written)?;
        self.finished = true;
        self.remove_earlier(&path);
        Ok(path)
    }

    fn write_index(&mut self) -> Result<PathBuf, Error> {
        let metadata = self.current.written_metadata();
        let index = json!({"metadata": metadata, "weight_map": self.weight_map});
        let mut bytes = serde_json::to_vec_pretty(&index).map_err(|e| Error::Serialize { message: e.to_string() })?;
        bytes.push(b'\n');
        let path = self.index_path();
        write_atomically(&path, &bytes)?;
        Ok(path)
    }

    /// Removes the files an earlier recording at this path left that this one did not write:
    /// `path` and its JSON form, the index, and shards `<stem>-<digits>.safetensors`. Best effort:
    /// this recording is complete either way.
    fn remove_earlier(&self, written: &Path) {
        let stem = self.stem();
        let mut earlier = vec![self.path.clone(), self.path.with_extension("json"), self.index_path()];
        if let Ok(entries) = fs::read_dir(self.path.parent().filter(|dir| !dir.as_os_str().is_empty()).unwrap_or(Path::new("."))) {
            let shard = |name: &str| {
                let digits = name.strip_prefix(&stem).and_then(|rest| rest.strip_prefix('-')).and_then(|rest| rest.strip_suffix(".safetensors"));
                digits.is_some_and(|d| d.len() >= 5 && d.bytes().all(|b| b.is_ascii_digit()))
            };
            earlier.extend(entries.flatten().filter(|entry| shard(&entry.file_name().to_string_lossy())).map(|entry| self.path.with_file_name(entry.file_name())));
        }
        let kept = |path: &PathBuf| path == written || self.written.contains(path) || (written == self.path && *path == self.path.with_extension("json"));
        for path in earlier.iter().filter(|path| !kept(path)) {
            let _ = fs::remove_file(path);
        }
    }
}

impl Drop for Shards {
    fn drop(&mut self) {
        if !self.finished {
            self.remove_written();
        }
    }
}

/// Writes `bytes` to a hidden temporary file beside `path` (which pita's folder reader skips),
/// flushed to disk, and renames it over `path`, so readers never see half a file. On failure the
/// temporary file is removed and `path` keeps what it held.
pub fn write_atomically(path: &Path, bytes: &[u8]) -> Result<(), Error> {
    write_atomically_with(path, |file| file.write_all(bytes))
}

/// [`write_atomically`] with the bytes written by `write` into the temporary file.
pub(crate) fn write_atomically_with(path: &Path, write: impl FnOnce(&mut fs::File) -> io::Result<()>) -> Result<(), Error> {
    let name = path.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
    let tmp = path.with_file_name(format!(".{name}.tmp{}", std::process::id()));
    let written = fs::File::create(&tmp)
        .and_then(|mut file| write(&mut file).and_then(|()| file.sync_all()))
        .and_then(|()| fs::rename(&tmp, path));
    written.map_err(|e| {
        let _ = fs::remove_file(&tmp);
        Error::io(path, e)
    })
}

/// A tensor whose bytes are already the dump's on this machine (little-endian, a dtype stored as
/// the dump stores it): one copy. Converting element by element costs seconds for a model's
/// recording in a debug build (5 s of a ResNet-18 port's 20 s run).
fn native_little_endian(data: &TensorData) -> Option<(Dtype, Vec<u8>)> {
    if !cfg!(target_endian = "little") {
        return None;
    }
    let (dtype, size) = match data.dtype() {
        DType::F64 => (Dtype::F64, 8),
        DType::F32 => (Dtype::F32, 4),
        DType::F16 => (Dtype::F16, 2),
        DType::BF16 => (Dtype::BF16, 2),
        DType::I64 => (Dtype::I64, 8),
        DType::I32 => (Dtype::I32, 4),
        DType::I16 => (Dtype::I16, 2),
        DType::I8 => (Dtype::I8, 1),
        DType::U64 => (Dtype::U64, 8),
        DType::U32 => (Dtype::U32, 4),
        DType::U16 => (Dtype::U16, 2),
        DType::U8 => (Dtype::U8, 1),
        _ => return None, // Flex32 is cast, bools are normalised to 0/1
    };
    let bytes = data.as_bytes();
    (bytes.len() == data.num_elements() * size).then(|| (dtype, bytes.to_vec()))
}

#[cfg(test)]
mod tests {
    use super::*;
    use safetensors::tensor::TensorView;

    #[test]
    fn the_same_dump_gives_the_same_bytes() {
        let build = || {
            let mut builder = Dump::builder().variant("check").experiment("p00").backend("test");
            for key in ["a", "b", "c", "d", "e", "f"] {
                builder = builder.metadata(key, key);
            }
            let mut dump = builder.build().unwrap();
            dump.data("w", burn::tensor::TensorData::new(vec![1.0f32, 2.0], [2])).unwrap();
            dump.safetensors_bytes().unwrap()
        };
        let first = build();
        for _ in 0..8 {
            assert_eq!(build(), first); // HashMap order differs between instances
        }
        let tensors = safetensors::SafeTensors::deserialize(&first).unwrap();
        assert_eq!(tensors.tensor("w").unwrap().data().len(), 8);
        let (_, meta) = safetensors::SafeTensors::read_metadata(&first).unwrap();
        assert_eq!(meta.metadata().as_ref().unwrap()["c"], "c");
    }
    use burn::tensor::{Bool, Int};

    fn device() -> Device {
        Device::flex()
    }

    fn sample() -> Dump {
        let mut dump = Dump::builder().experiment("p00").variant("check").input_sha256("ab").metadata("batch_size", 4).build().unwrap();
        let values = vec![0.1f32, -0.0, f32::NAN, f32::INFINITY, f32::MIN_POSITIVE / 2.0, 1e-45];
        dump.data("w.grad", TensorData::new(values, [2, 3])).unwrap();
        dump
    }

    fn json_of(dump: &Dump) -> Value {
        serde_json::from_slice(&dump.json_bytes().unwrap()).unwrap()
    }

    #[test]
    fn records_provenance() {
        let dump = sample();
        let meta = dump.metadata();
        assert_eq!(meta["format"], FORMAT);
        assert_eq!(meta["framework"], "burn");
        assert_eq!(meta["experiment"], "p00");
        assert_eq!(meta["variant"], "check");
        assert_eq!(meta["input_sha256"], "ab");
        assert_eq!(meta["batch_size"], "4");
        assert_eq!(meta["pita_version"], PITA_VERSION);
        assert_eq!(meta["burn_requirement"], BURN_REQUIREMENT);
        assert_eq!(meta["framework_version"], LOCKED_BURN_VERSION);
        assert!(!meta.contains_key("backend"), "host data names no backend");
        assert_eq!(dump.written_metadata()["backend"], "unknown");
        let stated = Dump::builder().variant("v").framework_version("0.22.7").backend("mine").build().unwrap();
        assert_eq!((stated.metadata()["framework_version"].as_str(), stated.metadata()["backend"].as_str()), ("0.22.7", "mine"));
    }

    #[test]
    fn the_requirement_is_the_manifests() {
        // As written (`burn = { version = "0.22.1", … }`) or as `cargo package` rewrites it.
        let manifest = include_str!("../Cargo.toml");
        let version = BURN_REQUIREMENT.trim_start_matches('^');
        let written = format!("burn = {{ version = \"{version}\"");
        let packaged = format!("[dependencies.burn]\nversion = \"{version}\"");
        assert!(manifest.contains(&written) || manifest.contains(&packaged), "Cargo.toml's burn requirement is not {BURN_REQUIREMENT}");
    }

    #[test]
    fn the_workspace_lock_is_found() {
        // Built inside the pita workspace, the build script finds its Cargo.lock.
        assert!(LOCKED_BURN_VERSION.starts_with("0.22."), "{LOCKED_BURN_VERSION}");
    }

    #[test]
    fn builder_refuses_what_cannot_be_written() {
        assert!(matches!(Dump::builder().variant("a/b").build(), Err(Error::InvalidVariant { .. })));
        assert!(matches!(Dump::builder().variant("").build(), Err(Error::InvalidVariant { .. })));
        assert!(matches!(Dump::builder().variant("a\nb").build(), Err(Error::InvalidVariant { .. })));
        let reserved = Dump::builder().variant("v").metadata("framework_version", "1").build();
        assert!(matches!(reserved, Err(Error::ReservedKey { ref key, .. }) if key == "framework_version"));
        let mut dump = sample();
        assert!(dump.set_metadata("format", "x").is_err());
        dump.set_metadata("lr", 0.5).unwrap();
        assert_eq!(dump.metadata()["lr"], "0.5");
    }

    #[test]
    fn refuses_duplicate_and_unprintable_names() {
        let mut dump = sample();
        let one = || TensorData::new(vec![1.0f32], [1]);
        assert!(matches!(dump.data("w.grad", one()), Err(Error::DuplicateTensor { .. })));
        assert!(matches!(dump.data("a\nOK", one()), Err(Error::InvalidName { .. })));
        assert!(matches!(dump.data("__metadata__", one()), Err(Error::InvalidName { .. })));
        assert_eq!(dump.len(), 1);
    }

    #[test]
    fn backend_is_named_after_the_first_tensor_or_the_builder() {
        let mut dump = Dump::builder().variant("v").build().unwrap();
        dump.tensor("x", Tensor::<1>::from_floats([1.0], &device().autodiff())).unwrap();
        dump.tensor("y", Tensor::<1>::from_floats([1.0], &device())).unwrap();
        assert_eq!(dump.metadata()["backend"], "Autodiff<Flex>");
        let mut dump = Dump::builder().variant("v").device(&device()).build().unwrap();
        dump.tensor("x", Tensor::<1>::from_floats([1.0], &device().autodiff())).unwrap();
        assert_eq!(dump.metadata()["backend"], "Flex");
    }

    #[test]
    #[allow(deprecated)]
    fn backend_names_are_readable() {
        assert_eq!(backend_name(&Device::flex()), "Flex");
        assert_eq!(backend_name(&Device::ndarray()), "NdArray");
        assert_eq!(backend_name(&Device::ndarray().autodiff()), "Autodiff<NdArray>");
        assert_eq!(backend_name(&Device::flex().autodiff().gradient_checkpointing()), "Autodiff<Flex, checkpointing Balanced>");
        assert_eq!(short_backend("Cube(Cuda(CudaDevice { index: 0 }))"), "Cuda(CudaDevice { index: 0 })");
    }

    /// The file as the safetensors crate writes it, its header then put in the fixed order: what
    /// `safetensors_bytes` wrote before it wrote tensor by tensor.
    fn through_the_safetensors_crate(dump: &Dump) -> Vec<u8> {
        let views: Vec<_> = dump.tensors.iter().map(|(name, t)| (name.as_str(), TensorView::new(t.dtype, t.shape.clone(), &t.bytes).unwrap())).collect();
        let metadata = dump.written_metadata();
        let bytes = safetensors::serialize(views, Some(metadata.clone().into_iter().collect::<HashMap<_, _>>())).unwrap();
        sorted_header(bytes, &metadata).unwrap()
    }

/// The same file with its header written in a fixed order: `__metadata__` sorted by key, then
    /// the tensors by name. The safetensors crate takes the metadata as a `HashMap`, whose order
    /// changes from run to run, so the same dump would otherwise not give the same bytes.
    fn sorted_header(bytes: Vec<u8>, metadata: &BTreeMap<String, String>) -> Result<Vec<u8>, String> {
        let length = u64::from_le_bytes(bytes[..8].try_into().map_err(|_| "no header length")?) as usize;
        let parsed: BTreeMap<String, Value> = serde_json::from_slice(&bytes[8..8 + length]).map_err(|e| e.to_string())?;
        // Maps filled in sorted order: sorted whether serde_json keeps insertion order or sorts.
        let mut header = Map::new();
        let sorted_metadata: Map<String, Value> = metadata.iter().map(|(k, v)| (k.clone(), Value::String(v.clone()))).collect();
        header.insert("__metadata__".to_string(), Value::Object(sorted_metadata));
        header.extend(parsed.into_iter().filter(|(name, _)| name != "__metadata__"));
        let mut text = serde_json::to_string(&Value::Object(header)).map_err(|e| e.to_string())?;
        while text.len() % 8 != 0 {
            text.push(' '); // safetensors pads the header to 8 bytes, so the data stays aligned
        }
        let mut out = Vec::with_capacity(8 + text.len() + bytes.len() - 8 - length);
        out.extend_from_slice(&(text.len() as u64).to_le_bytes());
        out.extend_from_slice(text.as_bytes());
        out.extend_from_slice(&bytes[8 + length..]);
        Ok(out)
    }

    #[test]
    fn writes_the_bytes_the_safetensors_crate_writes() {
        let mut dump = Dump::builder().variant("mix").build().unwrap();
        dump.data("b", TensorData::new(vec![1u8, 2, 3], [3])).unwrap()
            .data("a", TensorData::new(vec![0.5f32, -1.0], [2])).unwrap()
            .data("c", TensorData::new(vec![2.5f64], [1])).unwrap()
            .data("h", TensorData::new(vec![f16::from_f32(1.0)], [1])).unwrap()
            .data("s", TensorData::new(vec![7i64], [0usize; 0])).unwrap();
        let bytes = dump.safetensors_bytes().unwrap();
        assert_eq!(bytes, through_the_safetensors_crate(&dump));
        let mut changed = dump.clone();
        changed.data("z", TensorData::new(vec![1.0f32], [1])).unwrap();
        assert_ne!(changed.safetensors_bytes().unwrap(), bytes);
        let path = std::env::temp_dir().join(format!("pita-dump-stream-{}.safetensors", std::process::id()));
        dump.write_safetensors(&path).unwrap();
        let written = fs::read(&path).unwrap();
        fs::remove_file(&path).unwrap();
        assert_eq!(written, bytes);
    }

    #[test]
    fn safetensors_holds_metadata_and_exact_bits() {
        let dump = sample();
        let bytes = dump.safetensors_bytes().unwrap();
        let (_, meta) = safetensors::SafeTensors::read_metadata(&bytes).unwrap();
        let info = meta.metadata().as_ref().unwrap();
        assert_eq!(info["batch_size"], "4");
        assert_eq!(info["format"], FORMAT);
        assert_eq!(info["backend"], "unknown");
        let tensors = safetensors::SafeTensors::deserialize(&bytes).unwrap();
        let view = tensors.tensor("w.grad").unwrap();
        assert_eq!((view.dtype(), view.shape()), (Dtype::F32, &[2usize, 3][..]));
        assert_eq!(view.data(), dump.get("w.grad").unwrap().bytes());
    }

    #[test]
    fn json_values_read_back_to_the_same_bits() {
        let json = json_of(&sample());
        let tensor = &json["tensors"]["w.grad"];
        assert_eq!(tensor["dtype"], "F32");
        assert_eq!(tensor["values"][2], "NaN");
        assert_eq!(tensor["values"][3], "Infinity");
        assert_eq!(tensor["bits"][1], "80000000");
        assert_eq!(tensor["values"][1].as_f64().unwrap().to_bits(), (-0.0f64).to_bits());
        for (value, bits) in [(0, 0.1f32), (4, f32::MIN_POSITIVE / 2.0), (5, 1e-45)] {
            let read = tensor["values"][value].as_f64().unwrap() as f32;
            assert_eq!(read.to_bits(), bits.to_bits());
        }
        assert_eq!(json["metadata"]["variant"], "check");
    }

    /// Every dtype keeps its name, its bytes and, in JSON, values that read back exactly.
    #[test]
    fn every_dtype_keeps_its_dtype() {
        let mut dump = Dump::builder().variant("dtypes").build().unwrap();
        let f64s = vec![0.1f64, -2.5, f64::NAN, f64::NEG_INFINITY, 1e-310, f64::MAX];
        let f16s: Vec<f16> = [0.1f32, -65504.0, 6e-8, 1.0, 0.0, 1.0 / 3.0].map(f16::from_f32).to_vec();
        let bf16s: Vec<bf16> = [0.1f32, -3.0e38, 1e-40, 1.0, 0.0, 1.0 / 3.0].map(bf16::from_f32).to_vec();
        dump.data("f64", TensorData::new(f64s.clone(), [6])).unwrap()
            .data("f16", TensorData::new(f16s.clone(), [2, 3])).unwrap()
            .data("bf16", TensorData::new(bf16s.clone(), [3, 2])).unwrap()
            .data("i64", TensorData::new(vec![i64::MIN, -1, 0, i64::MAX], [4])).unwrap()
            .data("i32", TensorData::new(vec![i32::MIN, 7], [2])).unwrap()
            .data("i16", TensorData::new(vec![-3i16], [1])).unwrap()
            .data("i8", TensorData::new(vec![-128i8, 127], [2])).unwrap()
            .data("u64", TensorData::new(vec![u64::MAX], [1])).unwrap()
            .data("u32", TensorData::new(vec![u32::MAX], [1])).unwrap()
            .data("u16", TensorData::new(vec![65535u16], [1])).unwrap()
            .data("u8", TensorData::new(vec![0u8, 255], [2])).unwrap()
            .data("bool", TensorData::new(vec![true, false, true], [3])).unwrap()
            .data("empty", TensorData::new(Vec::<f32>::new(), [0, 3])).unwrap()
            .data("scalar", TensorData::new(vec![2.0f32], [0usize; 0])).unwrap();
        let names: Vec<&str> = dump.names().map(|n| dump.get(n).unwrap().dtype()).collect();
        assert_eq!(names, ["BF16", "BOOL", "F32", "F16", "F64", "I16", "I32", "I64", "I8", "F32", "U16", "U32", "U64", "U8"]);

        let bytes = dump.safetensors_bytes().unwrap();
        let read = safetensors::SafeTensors::deserialize(&bytes).unwrap();
        assert_eq!(read.tensor("bool").unwrap().data(), &[1, 0, 1]);
        assert_eq!(read.tensor("bf16").unwrap().dtype(), Dtype::BF16);
        assert_eq!(read.tensor("i64").unwrap().data()[..8], i64::MIN.to_le_bytes());
        assert_eq!(read.tensor("empty").unwrap().shape(), &[0, 3]);
        assert_eq!(read.tensor("scalar").unwrap().shape(), &[] as &[usize]);

        let json = json_of(&dump);
        let t = &json["tensors"];
        // Floats: values round to the bits; bits are the raw pattern, 16/4 hex digits.
        for (i, v) in f64s.iter().enumerate() {
            assert_eq!(t["f64"]["bits"][i], format!("{:016x}", v.to_bits()));
            if let Some(read) = t["f64"]["values"][i].as_f64() {
                assert_eq!(read.to_bits(), v.to_bits());
            }
        }
        assert_eq!(t["f64"]["values"][3], "-Infinity");
        for (i, v) in f16s.iter().enumerate() {
            assert_eq!(t["f16"]["bits"][i], format!("{:04x}", v.to_bits()));
            assert!(Half::F16.rounds_to(t["f16"]["values"][i].as_f64().unwrap(), v.to_bits()));
        }
        for (i, v) in bf16s.iter().enumerate() {
            assert_eq!(t["bf16"]["bits"][i], format!("{:04x}", v.to_bits()));
            assert!(Half::BF16.rounds_to(t["bf16"]["values"][i].as_f64().unwrap(), v.to_bits()));
        }
        // numpy's str(np.float16(...)) and pita.dump's bfloat16 writer give these:
        assert_eq!(t["f16"]["values"], json!([0.1, -65500.0, 6e-8, 1.0, 0.0, 0.3333]));
        assert_eq!(t["bf16"]["values"], json!([0.1, -3.0e38, 9e-41, 1.0, 0.0, 0.334]));
        // Integers and bools: values only, exact.
        assert_eq!(t["i64"]["values"], json!([i64::MIN, -1, 0, i64::MAX]));
        assert_eq!(t["u64"]["values"], json!([u64::MAX]));
        assert_eq!(t["i8"]["values"], json!([-128, 127]));
        assert_eq!(t["bool"]["values"], json!([true, false, true]));
        assert!(t["i64"].get("bits").is_none() && t["bool"].get("bits").is_none());
        assert_eq!(t["empty"]["values"], json!([]));
        assert_eq!(t["scalar"]["shape"], json!([]));
    }

    #[test]
    fn tensors_of_every_kind_keep_their_dtype() {
        let mut dump = Dump::builder().variant("kinds").build().unwrap();
        let floats = Tensor::<1>::from_floats([1.5, -2.0], &device());
        dump.tensor("f32", floats.clone()).unwrap()
            .tensor("f64", floats.clone().cast(burn::tensor::FloatDType::F64)).unwrap()
            .tensor("bf16", floats.clone().cast(burn::tensor::FloatDType::BF16)).unwrap()
            .tensor("i64", Tensor::<1, Int>::from_ints([3, -4], &device()).cast(burn::tensor::IntDType::I64)).unwrap()
            .tensor("bool", Tensor::<1, Bool>::from_bool(TensorData::from([true, false]), &device())).unwrap();
        let dtypes: Vec<&str> = ["f32", "f64", "bf16", "i64", "bool"].iter().map(|n| dump.get(n).unwrap().dtype()).collect();
        assert_eq!(dtypes, ["F32", "F64", "BF16", "I64", "BOOL"]);
        assert_eq!(dump.get("f64").unwrap().bytes()[..8], 1.5f64.to_le_bytes());
        assert_eq!(dump.get("bool").unwrap().bytes(), &[1, 0]);
    }

    #[test]
    #[allow(clippy::excessive_precision)] // exact f32 values, written in full
    fn f32_values_are_numpys_shortest_digits() {
        // Two shortest decimals tie for -30619.0625: numpy (and so pita.dump) prints the
        // correctly rounded one, Rust's `{:?}` the other (-30619.063).
        let values = [-30619.0625f32, 1897261.25, 0.1, 1e-45, f32::MAX, 16777216.0, 1.0000001];
        let json: Vec<Value> = values.iter().map(|&v| f32_value(v)).collect();
        assert_eq!(json, [json!(-30619.062), json!(1897261.2), json!(0.1), json!(1e-45), json!(3.4028235e38), json!(16777216.0), json!(1.0000001)]);
    }

    #[test]
    fn f16_shortest_reads_back() {
        // Every finite pattern (every 7th here) reads back from its decimal, either sign. The
        // digits were checked against pita.dump's writer on all 65,536 F16 and BF16 patterns.
        for bits in (0u16..0x7c00).step_by(7) {
            let value = Half::F16.shortest(bits);
            assert!(Half::F16.rounds_to(value, bits), "{bits:04x}: {value}");
            assert!(Half::F16.rounds_to(-value, bits | 0x8000) || value == 0.0);
        }
        assert_eq!(Half::F16.shortest(0x3c00), 1.0);
        assert_eq!(Half::F16.shortest(0x0001), 6e-8); // the smallest subnormal, 5.96e-8
        assert_eq!(Half::BF16.shortest(0x3dcd), 0.1); // 0.10009765625
    }

    #[test]
    fn write_leaves_no_temporary_files() {
        let dir = std::env::temp_dir().join(format!("pita-dump-test-{}", std::process::id()));
        let path = sample().write(&dir).unwrap();
        assert_eq!(path.file_name().unwrap(), "burn-check.safetensors");
        let mut names: Vec<_> = fs::read_dir(&dir).unwrap().map(|e| e.unwrap().file_name()).collect();
        names.sort();
        assert_eq!(names, ["burn-check.json", "burn-check.safetensors"]);
        let text = fs::read_to_string(dir.join("burn-check.json")).unwrap();
        assert!(text.ends_with("}\n"));
        fs::remove_dir_all(dir).unwrap();
    }

    #[test]
    fn a_dump_without_a_variant_is_written_to_any_path() {
        let mut dump = Dump::builder().experiment("p00").build().unwrap();
        assert!(!dump.metadata().contains_key("variant") && dump.stem().is_none());
        dump.data("w", TensorData::new(vec![1.5f32], [1])).unwrap();
        let dir = std::env::temp_dir().join(format!("pita-dump-write-to-{}", std::process::id()));
        let path = dump.write_to(&dir.join("sub").join("mine.SafeTensors")).unwrap();
        assert_eq!(fs::read(&path).unwrap(), dump.safetensors_bytes().unwrap());
        assert_eq!(fs::read(dir.join("sub").join("mine.json")).unwrap(), dump.json_bytes().unwrap());
        dump.write_to(&dir.join("alone.json")).unwrap();
        assert_eq!(fs::read(dir.join("alone.json")).unwrap(), dump.json_bytes().unwrap());
        assert!(!dir.join("alone.safetensors").exists());
        let error = dump.write(&dir).unwrap_err();
        assert!(matches!(error, Error::MissingVariant), "{error}");
        assert!(error.to_string().contains("Dump::write_to"), "{error}");
        for refused in ["mine.npz", "mine", "mine.safetensors.json.x"] {
            assert!(matches!(dump.write_to(&dir.join(refused)), Err(Error::InvalidPath { .. })), "{refused}");
        }
        fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn a_json_path_is_refused_for_a_dump_too_large_for_the_json_form() {
        assert!(JSON_TOO_LARGE.contains(&MAX_JSON_ELEMENTS.to_string()));
        let mut dump = Dump::builder().build().unwrap();
        dump.data("w", TensorData::new(vec![0u8; MAX_JSON_ELEMENTS + 1], [MAX_JSON_ELEMENTS + 1])).unwrap();
        let path = std::env::temp_dir().join(format!("pita-dump-large-{}.json", std::process::id()));
        let error = dump.write_to(&path).unwrap_err();
        assert_eq!(error.to_string(), format!("{}: {JSON_TOO_LARGE}", path.display()));
        assert!(!path.exists());
    }

    #[test]
    fn the_json_file_beside_a_safetensors_file_is_this_dumps_or_none() {
        let dir = std::env::temp_dir().join(format!("pita-dump-twin-{}", std::process::id()));
        fs::create_dir_all(&dir).unwrap();
        let (path, twin) = (dir.join("d.safetensors"), dir.join("d.json"));
        let stale = b"an earlier dump's tensors";
        // Too large for the JSON form: the earlier JSON file goes.
        let mut large = Dump::builder().build().unwrap();
        large.data("w", TensorData::new(vec![0u8; MAX_JSON_ELEMENTS + 1], [MAX_JSON_ELEMENTS + 1])).unwrap();
        fs::write(&twin, stale).unwrap();
        large.write_to(&path).unwrap();
        assert!(!twin.exists());
        // The JSON write fails (its temporary file's name is taken by a folder): the error is
        // returned, the safetensors file is the new dump's, and the earlier JSON file goes.
        fs::write(&twin, stale).unwrap();
        let blocker = dir.join(format!(".d.json.tmp{}", std::process::id()));
        fs::create_dir_all(&blocker).unwrap();
        let error = sample().write_to(&path).unwrap_err();
        fs::remove_dir(&blocker).unwrap();
        let (twin_left, written) = (twin.exists(), fs::read(&path).unwrap());
        fs::remove_dir_all(&dir).unwrap();
        assert!(matches!(&error, Error::Io { path, .. } if path.ends_with("d.json")), "{error}");
        assert_eq!(written, sample().safetensors_bytes().unwrap());
        assert!(!twin_left, "an earlier dump's JSON file was left beside the new safetensors file");
    }

    #[test]
    fn write_reports_an_unwritable_folder() {
        let file = std::env::temp_dir().join(format!("pita-dump-file-{}", std::process::id()));
        fs::write(&file, b"not a folder").unwrap();
        let error = sample().write(&file.join("sub")).unwrap_err();
        fs::remove_file(&file).unwrap();
        assert!(matches!(error, Error::Io { .. }), "{error}");
    }
}
