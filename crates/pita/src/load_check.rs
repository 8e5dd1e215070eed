//! A check after loading weights: burn-store's `allow_partial(true)` turns every parameter it could
//! not find (a renamed or packed PyTorch parameter) into a line in `ApplyResult::missing`, and the
//! parameter silently keeps its initial value.

use burn::store::ApplyResult;

/// The message [`assert_fully_loaded`] panics with; the book quotes it from a live run.
pub const NOT_LOADED: &str = "parameters were not loaded and keep their initial values";

// book:begin assert_fully_loaded
/// Panics if a load left any parameter missing or failed on any tensor; names the missing
/// parameters and the file's tensors that nothing used (usually the same weights under
/// PyTorch's names).
#[track_caller]
pub fn assert_fully_loaded(result: &ApplyResult) {
    let missing: Vec<&str> = result.missing.iter().map(|(path, _)| path.as_str()).collect();
    assert!(
        missing.is_empty() && result.errors.is_empty(),
        "{} {NOT_LOADED}: {missing:?}; unused in the file: {:?}; errors: {:?}",
        missing.len(),
        result.unused,
        result.errors
    );
}
// book:end

#[cfg(test)]
mod tests {
    use super::*;
    use burn::nn::{Linear, LinearConfig};
    use burn::store::{ModuleSnapshot, SafetensorsStore};
    use burn::tensor::Device;

    fn saved(linear: &Linear) -> SafetensorsStore {
        let mut store = SafetensorsStore::from_bytes(None);
        linear.save_into(&mut store).unwrap();
        SafetensorsStore::from_bytes(Some(store.get_bytes().unwrap()))
    }

    #[test]
    fn accepts_a_complete_load() {
        let device = Device::flex();
        let mut target: Linear = LinearConfig::new(2, 2).init(&device);
        let result = target.load_from(&mut saved(&LinearConfig::new(2, 2).init(&device))).unwrap();
        assert_fully_loaded(&result);
    }

    #[test]
    #[should_panic(expected = "1 parameters were not loaded and keep their initial values: [\"bias\"]")]
    fn rejects_a_partial_load() {
        let device = Device::flex();
        let mut target: Linear = LinearConfig::new(2, 2).init(&device);
        let source: Linear = LinearConfig::new(2, 2).with_bias(false).init(&device);
        let mut store = saved(&source).allow_partial(true);
        assert_fully_loaded(&target.load_from(&mut store).unwrap());
    }
}
