//! Guards for evaluation passes. burn has no `eval()` switch: Dropout and BatchNorm take their
//! training path when the input tensor is on an autodiff device and the layer's training flag
//! is enabled. `Module::valid()` disables the flags (and moves the parameters off autodiff).
//! [`assert_inference`] checks a pass at run time; [`Inference`] makes handing the training
//! model to an evaluation function a compile error.

use burn::module::{Flag, Module, ModuleVisitor, Param};
use burn::tensor::Tensor;

use crate::Error;

// book:begin assert_inference
/// Returns an error when `model.forward(input)` would take the training path: the input is on
/// an autodiff device and some layer's training flag is still enabled.
///
/// Cost: walks the model's flags; reads no tensor data (free).
pub fn check_inference<M: Module, const D: usize>(model: &M, input: &Tensor<D>) -> Result<(), Error> {
    if input.device().is_autodiff() {
        if let Some(flag) = enabled_training_flag(model) {
            let message = format!(
                "evaluation would run in training mode: `{flag}` is enabled and the input is on an autodiff device; call valid() first"
            );
            return Err(Error::check("inference::check_inference", message));
        }
    }
    Ok(())
}

/// Panics with [`check_inference`]'s message when the evaluation would run in training mode.
/// Same cost.
#[track_caller]
pub fn assert_inference<M: Module, const D: usize>(model: &M, input: &Tensor<D>) {
    if let Err(error) = check_inference(model, input) {
        panic!("{error}");
    }
}
// book:end

/// The path of the first enabled training flag in `model` (e.g. `drop.training`), if any.
pub fn enabled_training_flag<M: Module>(model: &M) -> Option<String> {
    let mut finder = FlagFinder { path: Vec::new(), found: None };
    model.visit(&mut finder);
    finder.found
}

struct FlagFinder {
    path: Vec<String>,
    found: Option<String>,
}

impl ModuleVisitor for FlagFinder {
    fn enter_module(&mut self, name: &str, _container_type: &str) {
        self.path.push(name.to_string());
    }

    fn exit_module(&mut self, _name: &str, _container_type: &str) {
        self.path.pop();
    }

    fn visit_flag(&mut self, flag: &Param<Flag>) {
        if self.found.is_none() && flag.val().is_enabled() {
            let path: Vec<&str> = self.path.iter().map(String::as_str).filter(|p| !p.is_empty()).collect();
            self.found = Some(path.join("."));
        }
    }
}

// book:begin Inference
/// A model in evaluation mode. The only way to build one is [`Inference::new`], which calls
/// `valid()`; a function that takes `&Inference<M>` cannot be handed the training model.
pub struct Inference<M>(M);

impl<M: Module> Inference<M> {
    /// The model in evaluation mode: `model.valid()`, training flags off, off autodiff.
    pub fn new(model: &M) -> Self {
        Inference(model.valid())
    }

    /// The evaluation model, to call `forward` on.
    pub fn model(&self) -> &M {
        &self.0
    }
}
// book:end

#[cfg(test)]
mod tests {
    use super::*;
    use burn::nn::{BatchNorm, BatchNormConfig, Dropout, DropoutConfig};
    use burn::tensor::Device;

    #[derive(Module, Debug)]
    struct Net {
        norm: BatchNorm,
        drop: Dropout,
    }

    fn net(device: &Device) -> Net {
        Net { norm: BatchNormConfig::new(2).init(device), drop: DropoutConfig::new(0.5).init() }
    }

    fn ones(device: &Device) -> Tensor<2> {
        Tensor::<2>::ones([4, 2], device)
    }

    #[test]
    fn names_the_first_enabled_flag() {
        let device = Device::flex().autodiff();
        assert_eq!(enabled_training_flag(&net(&device)).as_deref(), Some("norm.training"));
        assert_eq!(enabled_training_flag(&net(&device).valid()), None);
    }

    #[test]
    fn accepts_a_valid_model_or_an_input_without_autodiff() {
        let device = Device::flex().autodiff();
        let model = net(&device);
        assert_inference(&model.valid(), &ones(&device));
        assert_inference(&model, &ones(&device.clone().inner()));
    }

    #[test]
    fn the_result_form_names_the_flag() {
        let device = Device::flex().autodiff();
        let error = check_inference(&net(&device), &ones(&device)).unwrap_err();
        assert!(error.to_string().starts_with("evaluation would run in training mode: `norm.training` is enabled"));
        assert!(check_inference(&net(&device).valid(), &ones(&device)).is_ok());
    }

    #[test]
    #[should_panic(expected = "evaluation would run in training mode: `norm.training` is enabled")]
    fn rejects_the_training_model_on_an_autodiff_input() {
        let device = Device::flex().autodiff();
        assert_inference(&net(&device), &ones(&device));
    }

    #[test]
    fn inference_model_has_dropout_off() {
        let dropout: Dropout = DropoutConfig::new(0.5).init();
        let eval = Inference::new(&dropout);
        let out = eval.model().forward(Tensor::<1>::ones([64], &Device::flex().autodiff()));
        let values = out.into_data().convert::<f32>().try_to_vec::<f32>().unwrap();
        assert_eq!(values, vec![1.0; 64]);
    }
}
