//! Optimizer and scheduler hyper-parameters read back from a burn config, and a guard that a port
//! states PyTorch's values instead of inheriting burn's defaults.
//!
//! burn configs serialise to JSON (`Config: Serialize`), so every field, defaults included, can be
//! read back by name: `hparam(&AdamConfig::new(), "epsilon")`. Nested configs use a dotted path,
//! e.g. `"momentum.dampening"` in an `SgdConfig`.

use burn::config::Config;
use serde_json::Value;

use crate::Error;

/// The config's field at the dotted `path`, as a number (`false`/`true` read as 0/1); `None` if
/// absent or not a number.
pub fn hparam<C: Config>(config: &C, path: &str) -> Option<f64> {
    let json = serde_json::to_value(config).expect("a burn config serialises to JSON");
    let mut value = &json;
    for key in path.split('.') {
        value = value.get(key)?;
    }
    match value {
        Value::Number(n) => n.as_f64(),
        Value::Bool(b) => Some(f64::from(u8::from(*b))),
        _ => None,
    }
}

/// The config as burn prints it (its JSON form), on one line.
pub fn config_line<C: Config>(config: &C) -> String {
    serde_json::to_string(config).expect("a burn config serialises to JSON")
}

// burn's optimizer configs have their own defaults (Adam/AdamW/RMSProp epsilon 1e-5, AdamW weight
// decay 1e-4, momentum dampening 0.1, RMSProp momentum 0.9), unlike PyTorch's. A port that writes
// `XConfig::new()` inherits them silently. The guard compares each named field with the value the
// PyTorch code uses, at f32 precision (burn stores most of these as f32).
// book:begin assert_torch_hparams
/// Returns an error unless every `(field, value)` of `torch` equals the config's field
/// (compared as f32), naming the first that differs.
///
/// Cost: serialises the config to JSON once per field; no tensor is read. Run it once, where
/// the optimizer is configured.
pub fn check_torch_hparams<C: Config>(config: &C, torch: &[(&str, f64)]) -> Result<(), Error> {
    let name = std::any::type_name::<C>().rsplit("::").next().unwrap_or("config");
    for &(path, want) in torch {
        let found = hparam(config, path);
        if !found.is_some_and(|found| found as f32 == want as f32) {
            let found = found.map_or("missing".to_string(), show);
            let message = format!("optimizer hyper-parameter differs from PyTorch: {name}.{path} is {found}, PyTorch uses {}", show(want));
            return Err(Error::check("hparams::check_torch_hparams", message));
        }
    }
    Ok(())
}

/// Panics with [`check_torch_hparams`]'s message unless every field equals PyTorch's value.
/// Same cost.
#[track_caller]
pub fn assert_torch_hparams<C: Config>(config: &C, torch: &[(&str, f64)]) {
    if let Err(error) = check_torch_hparams(config, torch) {
        panic!("{error}");
    }
}

/// A value as f32, in the shorter of plain (`0.9`, `0`) and exponent (`1e-5`) form.
fn show(value: f64) -> String {
    let value = value as f32;
    let (plain, exponent) = (format!("{value}"), format!("{value:e}"));
    if plain.len() <= exponent.len() { plain } else { exponent }
}
// book:end

#[cfg(test)]
mod tests {
    use super::*;
    use burn::optim::momentum::MomentumConfig;
    use burn::optim::{AdamConfig, SgdConfig};

    #[test]
    fn reads_defaults_and_nested_fields() {
        assert_eq!(hparam(&AdamConfig::new(), "epsilon").map(|v| v as f32), Some(1e-5));
        let sgd = SgdConfig::new().with_momentum(Some(MomentumConfig::new()));
        assert_eq!(hparam(&sgd, "momentum.dampening"), Some(0.1));
        assert_eq!(hparam(&sgd, "momentum.nesterov"), Some(0.0));
        assert_eq!(hparam(&sgd, "momentum.missing"), None);
        assert_eq!(hparam(&SgdConfig::new(), "momentum.dampening"), None);
    }

    #[test]
    fn shows_values_short() {
        assert_eq!([show(1e-5), show(0.01), show(0.0), show(0.9)], ["1e-5", "0.01", "0", "0.9"]);
    }

    #[test]
    fn accepts_matching_values() {
        assert_torch_hparams(&AdamConfig::new().with_epsilon(1e-8), &[("epsilon", 1e-8), ("beta_1", 0.9)]);
    }

    #[test]
    #[should_panic(expected = "optimizer hyper-parameter differs from PyTorch: AdamConfig.epsilon is 1e-5")]
    fn rejects_a_default_that_differs() {
        assert_torch_hparams(&AdamConfig::new(), &[("epsilon", 1e-8)]);
    }

    #[test]
    fn the_result_form_names_the_field() {
        assert!(check_torch_hparams(&AdamConfig::new().with_epsilon(1e-8), &[("epsilon", 1e-8)]).is_ok());
        let error = check_torch_hparams(&AdamConfig::new(), &[("beta_1", 0.9), ("epsilon", 1e-8)]).unwrap_err();
        assert_eq!(error.to_string(), "optimizer hyper-parameter differs from PyTorch: AdamConfig.epsilon is 1e-5, PyTorch uses 1e-8");
    }

    #[test]
    #[should_panic(expected = "SgdConfig.momentum.dampening is missing")]
    fn rejects_a_missing_field() {
        assert_torch_hparams(&SgdConfig::new(), &[("momentum.dampening", 0.0)]);
    }
}
