//! A check after loading weights (feature `store`): burn-store's `allow_partial(true)` turns
//! every parameter it could not find (a renamed or packed PyTorch parameter) into a line in
//! `ApplyResult::missing`, and the parameter silently keeps its initial value.

use burn::store::ApplyResult;

use crate::Error;

// book:begin assert_fully_loaded
/// Returns an error if a load left any parameter missing or failed on any tensor; names the
/// missing parameters and the file's tensors that nothing used (usually the same weights under
/// PyTorch's names).
///
/// Cost: reads the load's report only (free); run it once per model load.
pub fn check_fully_loaded(result: &ApplyResult) -> Result<(), Error> {
    let missing: Vec<&str> = result.missing.iter().map(|(path, _)| path.as_str()).collect();
    if missing.is_empty() && result.errors.is_empty() {
        return Ok(());
    }
    let message = format!(
        "{} parameters were not loaded and keep their initial values: {missing:?}; unused in the file: {:?}; errors: {:?}",
        missing.len(),
        result.unused,
        result.errors
    );
    Err(Error::check("load_check::check_fully_loaded", message))
}

/// Panics with [`check_fully_loaded`]'s message if a load was partial. Same cost.
#[track_caller]
pub fn assert_fully_loaded(result: &ApplyResult) {
    if let Err(error) = check_fully_loaded(result) {
        panic!("{error}");
    }
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

    fn partial_load() -> ApplyResult {
        let device = Device::flex();
        let mut target: Linear = LinearConfig::new(2, 2).init(&device);
        let source: Linear = LinearConfig::new(2, 2).with_bias(false).init(&device);
        let mut store = saved(&source).allow_partial(true);
        target.load_from(&mut store).unwrap()
    }

    #[test]
    fn accepts_a_complete_load() {
        let device = Device::flex();
        let mut target: Linear = LinearConfig::new(2, 2).init(&device);
        let result = target.load_from(&mut saved(&LinearConfig::new(2, 2).init(&device))).unwrap();
        assert_fully_loaded(&result);
        assert!(check_fully_loaded(&result).is_ok());
    }

    #[test]
    #[should_panic(expected = "1 parameters were not loaded and keep their initial values: [\"bias\"]")]
    fn rejects_a_partial_load() {
        assert_fully_loaded(&partial_load());
    }

    #[test]
    fn the_result_form_names_the_missing_parameters() {
        let error = check_fully_loaded(&partial_load()).unwrap_err();
        assert!(error.to_string().starts_with("1 parameters were not loaded and keep their initial values: [\"bias\"]"));
    }
}
