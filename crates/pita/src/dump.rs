//! Writes a dump: tensors as `<side>-<variant>.safetensors` plus the readable JSON form beside it.
//!
//! The format (names, dtypes, metadata keys, edge cases) is specified in docs/dump-format.md; the
//! Python reader in `pita.dump` is the other half of it.

use std::collections::{BTreeMap, HashMap};
use std::fs;
use std::io::{self, Write};
use std::path::{Path, PathBuf};

use burn::tensor::Tensor;
use safetensors::tensor::{Dtype, TensorView};
use serde_json::{json, Map, Value};

/// Version tag of the dump format, stored in the `format` metadata key.
pub const FORMAT: &str = "pita-dump/1";

/// One float32 tensor, row-major.
#[derive(Debug, Clone, PartialEq)]
pub struct DumpTensor {
    pub shape: Vec<usize>,
    pub values: Vec<f32>,
}

/// A set of named tensors with the provenance every dump records.
#[derive(Debug, Clone)]
pub struct Dump {
    metadata: BTreeMap<String, String>,
    tensors: BTreeMap<String, DumpTensor>,
}

impl Dump {
    /// A burn-side dump of `experiment`/`variant`, fed with inputs hashing to `input_sha256`.
    pub fn new(experiment: &str, variant: &str, input_sha256: &str, backend: &str) -> Self {
        let metadata = [
            ("format", FORMAT),
            ("framework", "burn"),
            ("framework_version", crate::BURN_VERSION),
            ("backend", backend),
            ("experiment", experiment),
            ("variant", variant),
            ("input_sha256", input_sha256),
        ];
        Dump {
            metadata: metadata.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect(),
            tensors: BTreeMap::new(),
        }
    }

    /// Adds a metadata entry, e.g. `batch_size`, which compare uses to explain a scale factor.
    pub fn with_metadata(mut self, key: &str, value: impl ToString) -> Self {
        self.metadata.insert(key.to_string(), value.to_string());
        self
    }

    /// Adds a tensor, read back from the device as f32.
    pub fn tensor<const D: usize>(&mut self, name: &str, tensor: Tensor<D>) -> &mut Self {
        let shape = tensor.dims().to_vec();
        let values = tensor.into_data().convert::<f32>().try_to_vec::<f32>().expect("f32 data");
        self.insert(name, DumpTensor { shape, values })
    }

    /// Adds a tensor given as raw values.
    pub fn insert(&mut self, name: &str, tensor: DumpTensor) -> &mut Self {
        assert_eq!(tensor.shape.iter().product::<usize>(), tensor.values.len(), "{name}: shape and value count differ");
        self.tensors.insert(name.to_string(), tensor);
        self
    }

    pub fn metadata(&self) -> &BTreeMap<String, String> {
        &self.metadata
    }

    /// The file stem, `<side>-<variant>`.
    pub fn stem(&self) -> String {
        format!("{}-{}", self.metadata["framework"], self.metadata["variant"])
    }

    /// Writes `<dir>/<stem>.safetensors` and `<dir>/<stem>.json`, each atomically.
    pub fn write(&self, dir: &Path) -> io::Result<PathBuf> {
        fs::create_dir_all(dir)?;
        let path = dir.join(format!("{}.safetensors", self.stem()));
        write_atomically(&path, &self.to_safetensors())?;
        let json = serde_json::to_vec_pretty(&self.to_json()).expect("json");
        write_atomically(&path.with_extension("json"), &json)?;
        Ok(path)
    }

    fn to_safetensors(&self) -> Vec<u8> {
        let bytes: BTreeMap<&String, Vec<u8>> = self
            .tensors
            .iter()
            .map(|(name, t)| (name, t.values.iter().flat_map(|v| v.to_le_bytes()).collect()))
            .collect();
        let views = self.tensors.iter().map(|(name, t)| {
            let view = TensorView::new(Dtype::F32, t.shape.clone(), &bytes[name]).expect("view");
            (name.as_str(), view)
        });
        let metadata: HashMap<String, String> = self.metadata.clone().into_iter().collect();
        safetensors::serialize(views, Some(metadata)).expect("serialize")
    }

    fn to_json(&self) -> Value {
        let tensors: Map<String, Value> = self
            .tensors
            .iter()
            .map(|(name, t)| (name.clone(), tensor_json(t)))
            .collect();
        json!({ "format": FORMAT, "metadata": self.metadata, "tensors": tensors })
    }
}

fn tensor_json(tensor: &DumpTensor) -> Value {
    let values: Vec<Value> = tensor.values.iter().map(|v| readable(*v)).collect();
    let bits: Vec<String> = tensor.values.iter().map(|v| format!("{:08x}", v.to_bits())).collect();
    json!({ "dtype": "F32", "shape": tensor.shape, "values": values, "bits": bits })
}

/// Shortest decimal that reads back as the same f32; non-finite values as strings.
fn readable(value: f32) -> Value {
    if value.is_nan() {
        json!("NaN")
    } else if value.is_infinite() {
        json!(if value > 0.0 { "Infinity" } else { "-Infinity" })
    } else {
        serde_json::from_str(&format!("{value:?}")).expect("f32 debug form is a JSON number")
    }
}

/// Writes `bytes` to a temporary file beside `path` and renames it, so readers never see half a file.
pub fn write_atomically(path: &Path, bytes: &[u8]) -> io::Result<()> {
    let tmp = path.with_extension(format!("tmp{}", std::process::id()));
    let mut file = fs::File::create(&tmp)?;
    file.write_all(bytes)?;
    file.sync_all()?;
    fs::rename(&tmp, path)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sample() -> Dump {
        let mut dump = Dump::new("p00", "check", "ab", "test").with_metadata("batch_size", 4);
        let values = vec![0.1, -0.0, f32::NAN, f32::INFINITY, f32::MIN_POSITIVE / 2.0, 1e-45];
        dump.insert("w.grad", DumpTensor { shape: vec![2, 3], values });
        dump
    }

    #[test]
    fn safetensors_holds_metadata_and_exact_bits() {
        let dump = sample();
        let bytes = dump.to_safetensors();
        let (_, meta) = safetensors::SafeTensors::read_metadata(&bytes).unwrap();
        let info = meta.metadata().as_ref().unwrap();
        assert_eq!(info["batch_size"], "4");
        assert_eq!(info["format"], FORMAT);
        let tensors = safetensors::SafeTensors::deserialize(&bytes).unwrap();
        let view = tensors.tensor("w.grad").unwrap();
        assert_eq!(view.shape(), &[2, 3]);
        let read: Vec<u32> = view.data().chunks(4).map(|c| u32::from_le_bytes(c.try_into().unwrap())).collect();
        let want: Vec<u32> = dump.tensors["w.grad"].values.iter().map(|v| v.to_bits()).collect();
        assert_eq!(read, want);
    }

    #[test]
    fn json_values_read_back_to_the_same_bits() {
        let json = sample().to_json();
        let tensor = &json["tensors"]["w.grad"];
        assert_eq!(tensor["values"][2], "NaN");
        assert_eq!(tensor["values"][3], "Infinity");
        assert_eq!(tensor["bits"][1], "80000000");
        for (value, bits) in [(0, 0.1f32), (4, f32::MIN_POSITIVE / 2.0), (5, 1e-45)] {
            let read = tensor["values"][value].as_f64().unwrap() as f32;
            assert_eq!(read.to_bits(), bits.to_bits());
        }
    }

    #[test]
    fn write_leaves_no_temporary_files() {
        let dir = std::env::temp_dir().join(format!("pita-dump-test-{}", std::process::id()));
        let path = sample().write(&dir).unwrap();
        assert_eq!(path.file_name().unwrap(), "burn-check.safetensors");
        let mut names: Vec<_> = fs::read_dir(&dir).unwrap().map(|e| e.unwrap().file_name()).collect();
        names.sort();
        assert_eq!(names, ["burn-check.json", "burn-check.safetensors"]);
        fs::remove_dir_all(dir).unwrap();
    }
}
