//! Where a safetensors file came from. burn's `SafetensorsStore` writes `producer = burn` into the
//! file's metadata; `safetensors.torch.save_file(model.state_dict(), ...)` writes none. A file
//! without it holds PyTorch's layouts (Linear weights `[out, in]`), and loading it into burn
//! without `PyTorchToBurnAdapter` leaves square Linear weights untransposed.

use std::path::Path;

use crate::Error;

/// The `producer` entry of a safetensors file's metadata, if any.
///
/// Cost: reads the file (once per model load).
pub fn producer(path: &Path) -> Result<Option<String>, Error> {
    let bytes = std::fs::read(path).map_err(|e| Error::io(path, e))?;
    let (_, header) = safetensors::SafeTensors::read_metadata(&bytes)
        .map_err(|e| Error::io(path, std::io::Error::new(std::io::ErrorKind::InvalidData, e.to_string())))?;
    Ok(header.metadata().as_ref().and_then(|m| m.get("producer").cloned()))
}

// book:begin assert_written_by_burn
/// Returns an error unless the safetensors file at `path` was written by burn, so a plain
/// `SafetensorsStore::from_file(path)` (no adapter) reads it in burn's own layouts; or if the
/// file cannot be read as safetensors.
///
/// Cost: reads the file (once per model load).
pub fn check_written_by_burn(path: &Path) -> Result<(), Error> {
    if producer(path)?.as_deref() == Some("burn") {
        return Ok(());
    }
    let message = format!(
        "{} was not written by burn (no producer=burn in its metadata): if it is a PyTorch state_dict, load it with \
         SafetensorsStore::from_file(..).with_from_adapter(PyTorchToBurnAdapter)",
        path.display()
    );
    Err(Error::check("store_origin::check_written_by_burn", message))
}

/// Panics with [`check_written_by_burn`]'s message unless burn wrote the file. Same cost.
#[track_caller]
pub fn assert_written_by_burn(path: &Path) {
    if let Err(error) = check_written_by_burn(path) {
        panic!("{error}");
    }
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
        let checked = check_written_by_burn(&path);
        std::fs::remove_file(&path).unwrap();
        let message = *result.unwrap_err().downcast::<String>().unwrap();
        assert!(message.contains("was not written by burn (no producer=burn in its metadata)"), "{message}");
        assert_eq!(checked.unwrap_err().to_string(), message);
    }

    #[test]
    fn a_missing_file_is_an_io_error() {
        let error = check_written_by_burn(Path::new("/nonexistent/pita/weights.safetensors")).unwrap_err();
        assert!(matches!(error, Error::Io { .. }), "{error}");
    }
}
