//! What a load changed: a module's parameters taken before a load and compared, byte for byte,
//! with the same parameters afterwards. A parameter whose bytes did not change is one the load
//! left at its initial value (a copy compared with itself, so the answer is exact on any machine).

use std::collections::BTreeMap;

use burn::store::{bridge, ModuleSnapshot};

use crate::compat::collected_tensor_path;

/// A module's parameters by path (`lstm.input_gate.input_transform.weight`), as raw bytes.
pub struct Parameters(BTreeMap<String, Vec<u8>>);

impl Parameters {
    /// The parameters of `module` as they are now (take this before the load).
    pub fn of(module: &impl ModuleSnapshot) -> Parameters {
        let bytes = module
            .collect(None, None, false)
            .into_iter()
            .map(|tensor| {
                let data = bridge::to_data(&tensor).expect("parameter data");
                (collected_tensor_path(&tensor), data.as_bytes().to_vec())
            })
            .collect();
        Parameters(bytes)
    }

    /// Every parameter path, sorted.
    pub fn paths(&self) -> Vec<String> {
        self.0.keys().cloned().collect()
    }

    /// The paths whose values in `module` are still exactly these: what a load left untouched.
    pub fn unchanged_in(&self, module: &impl ModuleSnapshot) -> Vec<String> {
        let now = Parameters::of(module);
        self.0
            .iter()
            .filter(|(path, bytes)| now.0.get(*path) == Some(bytes))
            .map(|(path, _)| path.clone())
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use burn::module::Param;
    use burn::nn::{Linear, LinearConfig};
    use burn::tensor::{Device, Tensor};

    #[test]
    fn a_replaced_parameter_is_changed_the_others_are_not() {
        let device = Device::flex();
        let mut linear: Linear = LinearConfig::new(2, 3).init(&device);
        let before = Parameters::of(&linear);
        assert_eq!(before.paths(), ["bias", "weight"]);
        assert_eq!(before.unchanged_in(&linear), ["bias", "weight"]);
        linear.weight = Param::from_tensor(Tensor::zeros([2, 3], &device));
        assert_eq!(before.unchanged_in(&linear), ["bias"]);
    }
}
