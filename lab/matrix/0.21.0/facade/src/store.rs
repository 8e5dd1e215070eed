//! burn 0.22's burn-store API over 0.21's: `ModuleSnapshot` names no backend, and `bridge::to_data`
//! reads what a store or `collect` holds (0.21: a `TensorSnapshot`, 0.22: burn-pack's tensor).
pub use burn021::store::*;

use crate::Backend;
use burn021::store as upstream;

/// 0.22's `bridge`: between stored tensors and their data.
pub mod bridge {
    use super::TensorSnapshot;
    use crate::tensor::TensorData;

    /// The data of a stored tensor.
    pub fn to_data(tensor: &TensorSnapshot) -> Result<TensorData, super::TensorSnapshotError> {
        tensor.to_data()
    }

    /// A stored tensor named `name` (its path, dot-separated) holding `data`; without a
    /// `param_id`, a fresh one (0.22 leaves it unset).
    pub fn from_data(data: TensorData, name: String, param_id: Option<u64>) -> TensorSnapshot {
        let path = name.split('.').map(str::to_string).collect();
        let id = param_id.map(burn021::module::ParamId::from).unwrap_or_default();
        TensorSnapshot::from_data(data, path, Vec::new(), id)
    }
}

/// 0.22's burn-pack tensor: what 0.21 stores and collects, a `TensorSnapshot`.
pub mod burn_pack {
    pub type Tensor = super::TensorSnapshot;
}

/// burn 0.22's `ModuleSnapshot` (no backend parameter), for every 0.21 `ModuleSnapshot<Backend>`.
/// Not a subtrait of 0.21's, for the reason given at `crate::module::Module`.
pub trait ModuleSnapshot: crate::module::Module {
    fn collect(&self, filter: Option<PathFilter>, adapter: Option<Box<dyn ModuleAdapter>>, skip_enum_variants: bool) -> Vec<TensorSnapshot>;
    fn apply(&mut self, tensors: Vec<TensorSnapshot>, filter: Option<PathFilter>, adapter: Option<Box<dyn ModuleAdapter>>,
             skip_enum_variants: bool) -> ApplyResult;
    fn save_into<P: ModuleStore>(&self, store: &mut P) -> Result<(), P::Error>;
    fn load_from<P: ModuleStore>(&mut self, store: &mut P) -> Result<ApplyResult, P::Error>;
}

impl<M: upstream::ModuleSnapshot<Backend> + crate::module::Module> ModuleSnapshot for M {
    fn collect(&self, filter: Option<PathFilter>, adapter: Option<Box<dyn ModuleAdapter>>, skip_enum_variants: bool) -> Vec<TensorSnapshot> {
        upstream::ModuleSnapshot::collect(self, filter, adapter, skip_enum_variants)
    }
    fn apply(&mut self, tensors: Vec<TensorSnapshot>, filter: Option<PathFilter>, adapter: Option<Box<dyn ModuleAdapter>>,
             skip_enum_variants: bool) -> ApplyResult {
        upstream::ModuleSnapshot::apply(self, tensors, filter, adapter, skip_enum_variants)
    }
    fn save_into<P: ModuleStore>(&self, store: &mut P) -> Result<(), P::Error> {
        upstream::ModuleSnapshot::save_into(self, store)
    }
    fn load_from<P: ModuleStore>(&mut self, store: &mut P) -> Result<ApplyResult, P::Error> {
        upstream::ModuleSnapshot::load_from(self, store)
    }
}
