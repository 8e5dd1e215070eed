//! burn 0.22's module traits, which name no backend: `Module`, `ModuleVisitor`, `ModuleMapper`.
//! Each is implemented for everything burn 0.21 implements its own for on [`Backend`], and
//! forwards there; a visitor or mapper written for 0.22 is adapted to 0.21's by a wrapper.
pub use burn021::module::*;
pub use burn_facade_derive::Module;

use crate::tensor::{Bool, Int, Tensor};
use crate::Backend;
#[doc(hidden)] // What `#[derive(Module)]` implements: burn 0.21's own traits.
pub use burn021::module as upstream;

/// 0.22's flag parameter (a module's training switch, host-side). burn 0.21 has no flag: no module
/// holds one, so no visitor ever meets one.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Flag(bool);

impl Flag {
    pub const fn new(value: bool) -> Self {
        Self(value)
    }

    pub const fn is_enabled(&self) -> bool {
        self.0
    }
}

impl Parameter for Flag {
    type Device = ();

    fn device(&self) {}

    fn is_require_grad(&self) -> bool {
        false
    }

    fn set_require_grad(self, _require_grad: bool) -> Self {
        self
    }
}

/// burn 0.22's `Module`, implemented for every 0.21 `AutodiffModule` on [`Backend`] (whose inner
/// backend is itself). Not a subtrait of 0.21's: with both in scope through a bound, every method
/// name would be ambiguous.
pub trait Module: Clone + Send + core::fmt::Debug + Sized {
    fn num_params(&self) -> usize;
    fn visit<Visitor: ModuleVisitor>(&self, visitor: &mut Visitor);
    fn map<Mapper: ModuleMapper>(self, mapper: &mut Mapper) -> Self;
    /// The module without gradients (0.21: `AutodiffModule::valid`).
    fn valid(&self) -> Self;
    fn no_grad(self) -> Self;
    /// 0.22's `freeze` (no gradients, and no training path): absent on 0.21, which has only
    /// `no_grad`.
    fn freeze(self) -> Self {
        crate::absent::api_absent("burn::module::Module::freeze")
    }
    fn to_device(self, device: &crate::tensor::Device) -> Self;
    fn fork(self, device: &crate::tensor::Device) -> Self;
}

impl<M: upstream::AutodiffModule<Backend, InnerModule = M>> Module for M {
    fn num_params(&self) -> usize {
        upstream::Module::num_params(self)
    }
    fn visit<Visitor: ModuleVisitor>(&self, visitor: &mut Visitor) {
        upstream::Module::visit(self, &mut Upstream(visitor))
    }
    fn map<Mapper: ModuleMapper>(self, mapper: &mut Mapper) -> Self {
        upstream::Module::map(self, &mut Upstream(mapper))
    }
    fn valid(&self) -> Self {
        upstream::AutodiffModule::valid(self)
    }
    fn no_grad(self) -> Self {
        upstream::Module::no_grad(self)
    }
    fn to_device(self, device: &crate::tensor::Device) -> Self {
        upstream::Module::to_device(self, device)
    }
    fn fork(self, device: &crate::tensor::Device) -> Self {
        upstream::Module::fork(self, device)
    }
}


/// burn 0.22's `ModuleVisitor` (no backend parameter).
#[allow(unused_variables)]
pub trait ModuleVisitor {
    fn visit_float<const D: usize>(&mut self, param: &Param<Tensor<D>>) {}
    fn visit_int<const D: usize>(&mut self, param: &Param<Tensor<D, Int>>) {}
    fn visit_bool<const D: usize>(&mut self, param: &Param<Tensor<D, Bool>>) {}
    /// Never called on burn 0.21, which has no flags.
    fn visit_flag(&mut self, flag: &Param<Flag>) {}
    fn enter_module(&mut self, name: &str, container_type: &str) {}
    fn exit_module(&mut self, name: &str, container_type: &str) {}
    fn visit_float_with_path<const D: usize>(&mut self, path: &[String], id: ParamId, tensor: &Tensor<D>) {}
    fn visit_int_with_path<const D: usize>(&mut self, path: &[String], id: ParamId, tensor: &Tensor<D, Int>) {}
    fn visit_bool_with_path<const D: usize>(&mut self, path: &[String], id: ParamId, tensor: &Tensor<D, Bool>) {}
}

/// burn 0.22's `ModuleMapper` (no backend parameter).
#[allow(unused_variables)]
pub trait ModuleMapper {
    fn enter_module(&mut self, name: &str, container_type: &str) {}
    fn exit_module(&mut self, name: &str, container_type: &str) {}
    fn map_float<const D: usize>(&mut self, param: Param<Tensor<D>>) -> Param<Tensor<D>> {
        param
    }
    fn map_int<const D: usize>(&mut self, param: Param<Tensor<D, Int>>) -> Param<Tensor<D, Int>> {
        param
    }
    fn map_bool<const D: usize>(&mut self, param: Param<Tensor<D, Bool>>) -> Param<Tensor<D, Bool>> {
        param
    }
}

/// A 0.22 visitor or mapper, as 0.21's.
struct Upstream<'a, T>(&'a mut T);

impl<V: ModuleVisitor> upstream::ModuleVisitor<Backend> for Upstream<'_, V> {
    fn visit_float<const D: usize>(&mut self, param: &Param<Tensor<D>>) {
        self.0.visit_float(param)
    }
    fn visit_int<const D: usize>(&mut self, param: &Param<Tensor<D, Int>>) {
        self.0.visit_int(param)
    }
    fn visit_bool<const D: usize>(&mut self, param: &Param<Tensor<D, Bool>>) {
        self.0.visit_bool(param)
    }
    fn enter_module(&mut self, name: &str, container_type: &str) {
        self.0.enter_module(name, container_type)
    }
    fn exit_module(&mut self, name: &str, container_type: &str) {
        self.0.exit_module(name, container_type)
    }
    fn visit_float_with_path<const D: usize>(&mut self, path: &[String], id: ParamId, tensor: &Tensor<D>) {
        self.0.visit_float_with_path(path, id, tensor)
    }
    fn visit_int_with_path<const D: usize>(&mut self, path: &[String], id: ParamId, tensor: &Tensor<D, Int>) {
        self.0.visit_int_with_path(path, id, tensor)
    }
    fn visit_bool_with_path<const D: usize>(&mut self, path: &[String], id: ParamId, tensor: &Tensor<D, Bool>) {
        self.0.visit_bool_with_path(path, id, tensor)
    }
}

impl<M: ModuleMapper> upstream::ModuleMapper<Backend> for Upstream<'_, M> {
    fn enter_module(&mut self, name: &str, container_type: &str) {
        self.0.enter_module(name, container_type)
    }
    fn exit_module(&mut self, name: &str, container_type: &str) {
        self.0.exit_module(name, container_type)
    }
    fn map_float<const D: usize>(&mut self, param: Param<Tensor<D>>) -> Param<Tensor<D>> {
        self.0.map_float(param)
    }
    fn map_int<const D: usize>(&mut self, param: Param<Tensor<D, Int>>) -> Param<Tensor<D, Int>> {
        self.0.map_int(param)
    }
    fn map_bool<const D: usize>(&mut self, param: Param<Tensor<D, Bool>>) -> Param<Tensor<D, Bool>> {
        self.0.map_bool(param)
    }
}
