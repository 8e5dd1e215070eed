//! Where a safetensors file came from. burn's `SafetensorsStore` writes `producer = burn` into the
//! file's metadata; `safetensors.torch.save_file(model.state_dict(), ...)` writes none. A file
//! without it holds PyTorch's layouts (Linear weights `[out, in]`), and loading it into burn
//! without `PyTorchToBurnAdapter` leaves square Linear weights untransposed.

use std::path::Path;

/// The message [`assert_written_by_burn`] panics with; the book quotes it from a live run.
pub const NOT_FROM_BURN: &str = "was not written by burn (no producer=burn in its metadata)";

/// The `producer` entry of a safetensors file's metadata, if any.
pub fn producer(path: &Path) -> std::io::Result<Option<String>> {
    let bytes = std::fs::read(path)?;
    let (_, header) = safetensors::SafeTensors::read_metadata(&bytes)
        .map_err(|e| std::io::Error::new(std::io::ErrorKind::InvalidData, e.to_string()))?;
    Ok(header.metadata().as_ref().and_then(|m| m.get("producer").cloned()))
}

// book:begin assert_written_by_burn
/// Panics unless the safetensors file at `path` was written by burn, so a plain
/// `SafetensorsStore::from_file(path)` (no adapter) reads it in burn's own layouts.
#[track_caller]
pub fn assert_written_by_burn(path: &Path) {
    let producer = producer(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    assert!(
        producer.as_deref() == Some("burn"),
        "{} {NOT_FROM_BURN}: if it is a PyTorch state_dict, load it with \
         SafetensorsStore::from_file(..).with_from_adapter(PyTorchToBurnAdapter)",
        path.display()
    );
}
// book:end

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashMap;

    fn write(name: &str, metadata: Option<HashMap<String, String>>) -> std::path::PathBuf {
        let path = std::env::temp_dir().join(format!("pita-store-origin-{}-{name}.safetensors", std::process::id()));
        let data = [0u8; 8];
        let view = safetensors::tensor::TensorView::new(safetensors::tensor::Dtype::F32, vec![2], &data).unwrap();
        std::fs::write(&path, safetensors::serialize([("weight", view)], metadata).unwrap()).unwrap();
        path
    }

    #[test]
    fn accepts_a_file_written_by_burn() {
        let path = write("burn", Some(HashMap::from([("producer".to_string(), "burn".to_string())])));
        assert_written_by_burn(&path);
        std::fs::remove_file(path).unwrap();
    }

    #[test]
    fn rejects_a_file_without_producer() {
        let path = write("torch", None);
        let result = std::panic::catch_unwind(|| assert_written_by_burn(&path));
        std::fs::remove_file(&path).unwrap();
        let message = *result.unwrap_err().downcast::<String>().unwrap();
        assert!(message.contains(NOT_FROM_BURN), "{message}");
    }
}
