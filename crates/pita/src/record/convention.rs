//! The convention as data, tests/data/recording-convention.json in the pita repository, which
//! `pita/recording.py`'s tests read too: the names this recorder builds and the keys it refuses.

use super::*;
use burn::nn::LinearConfig;
use burn::tensor::Device;
use serde_json::Value;
use std::path::Path;

/// The fixture; None only in a packaged crate, which holds nothing outside the crate.
fn fixture() -> Option<Value> {
    let crate_dir = Path::new(env!("CARGO_MANIFEST_DIR"));
    let path = crate_dir.join("../../tests/data/recording-convention.json");
    match std::fs::read_to_string(&path) {
        Ok(text) => Some(serde_json::from_str(&text).expect("the fixture is JSON")),
        Err(_) if crate_dir.join("Cargo.toml.orig").exists() => None,
        Err(error) => panic!("{}: {error}", path.display()),
    }
}

fn strings(value: &Value) -> Vec<&str> {
    value.as_array().expect("a list").iter().map(|v| v.as_str().expect("a string")).collect()
}

/// A builder call of the fixture, `["step_name", 1, "fc.weight"]`: its name and arguments.
struct Call<'a>(&'a [Value]);

impl Call<'_> {
    fn builder(&self) -> &str {
        self.0[0].as_str().expect("a builder's name")
    }
    fn text(&self, i: usize) -> &str {
        self.0[i].as_str().expect("a string argument")
    }
    fn number(&self, i: usize) -> usize {
        self.0[i].as_u64().expect("a number argument") as usize
    }
}

#[test]
fn builds_the_names_of_the_convention() {
    let Some(convention) = fixture() else { return };
    assert_eq!(convention["recording"], RECORDING);
    assert_eq!(convention["max_number"], MAX_STEP);
    let mut built = 0;
    for example in convention["names"].as_array().expect("names") {
        let Some(build) = example.get("build") else { continue };
        let call = Call(build.as_array().expect("a builder call"));
        let name = match call.builder() {
            "param_name" => param_name(call.text(1)),
            "init_name" => init_name(call.text(1)),
            "grad_name" => grad_name(call.text(1)),
            "act_name" => act_name(call.text(1), call.number(2)),
            "loss_name" => loss_name(call.number(1)),
            "step_name" => step_name(call.number(1), call.text(2)),
            "mask_name" => mask_name(call.number(1), call.text(2), call.number(3)),
            "gradnorm_name" => gradnorm_name(call.number(1), call.text(2)),
            "optim_name" => continue, // burn's recorder records no optimizer state
            other => panic!("a builder the recorder lacks: {other}"),
        };
        assert_eq!(name, example["name"].as_str().expect("a name"));
        built += 1;
    }
    assert!(built >= 10, "{built} names built");
}

#[test]
fn refuses_the_step_numbers_the_convention_cannot_hold() {
    let Some(convention) = fixture() else { return };
    let device = Device::flex();
    let model = LinearConfig::new(1, 1).init(&device);
    let loss = Tensor::<1>::from_floats([0.5], &device);
    let mut refused = 0;
    for call in convention["refused"].as_array().expect("refused calls") {
        let call = Call(call.as_array().expect("a builder call"));
        let mut recorder = Recorder::new();
        let result = match call.builder() {
            "loss_name" => recorder.loss(call.number(1), &loss).map(|_| ()),
            "step_name" => recorder.step(call.number(1), &model).map(|_| ()),
            #[cfg(feature = "autodiff")]
            "gradnorm_name" => {
                let device = device.clone().autodiff();
                let model = LinearConfig::new(1, 1).init(&device);
                let grads = model.forward(Tensor::<2>::ones([1, 1], &device)).sum().backward();
                recorder.grad_norms(call.number(1), &model, &grads).map(|_| ())
            }
            _ => continue, // taps number their calls; no optimizer state
        };
        assert!(matches!(result, Err(Error::Recording { .. })), "{:?}", call.0);
        refused += 1;
    }
    assert!(refused >= 4 + if cfg!(feature = "autodiff") { 2 } else { 0 }, "{refused} refusals checked");
    Recorder::new().loss(MAX_STEP, &loss).unwrap().step(MAX_STEP, &model).unwrap();
}

#[test]
fn refuses_the_reserved_metadata_keys() {
    let Some(convention) = fixture() else { return };
    let metadata = &convention["metadata"];
    assert_eq!(strings(&metadata["recorder"]), RECORDING_KEYS);
    for key in strings(&metadata["recorder"]).into_iter().chain(strings(&metadata["provenance"])) {
        let taken = Recorder::new().into_dump(Dump::builder().metadata(key, "x"));
        assert!(matches!(taken, Err(Error::ReservedKey { key: ref refused, .. }) if refused == key), "{key}");
    }
    for key in strings(&metadata["user"]) {
        let dump = Recorder::new().into_dump(Dump::builder().metadata(key, "x")).unwrap();
        assert_eq!(dump.metadata()[key], "x");
    }
}

/// The fixture's burn example: a post-norm BERT-style block's output, a Conv2d and a GELU.
#[derive(burn::module::Module, Debug)]
struct Output {
    dense: burn::nn::Linear,
    layer_norm: burn::nn::LayerNorm, // loaded from BERT's `LayerNorm`
    dropout: burn::nn::Dropout,
}

#[derive(burn::module::Module, Debug)]
struct Attention {
    output: Output,
}

#[derive(burn::module::Module, Debug)]
struct Example {
    attention: Attention,
    conv: burn::nn::conv::Conv2d,
    act: burn::nn::Gelu,
}

#[test]
fn records_the_settings_of_the_convention() {
    use burn::nn::conv::Conv2dConfig;
    use burn::nn::loss::{CrossEntropyLossConfig, Reduction};
    use burn::nn::{DropoutConfig, Gelu, LayerNormConfig, PaddingConfig2d};
    let Some(convention) = fixture() else { return };
    let device = Device::flex();
    let output = Output {
        dense: LinearConfig::new(4, 4).init(&device),
        layer_norm: LayerNormConfig::new(4).with_epsilon(1e-12).init(&device),
        dropout: DropoutConfig::new(0.1).init(),
    };
    let conv = Conv2dConfig::new([1, 2], [3, 3]).with_padding(PaddingConfig2d::Explicit(1, 1, 1, 1)).with_bias(false).init(&device);
    let model = Example { attention: Attention { output }, conv, act: Gelu::new() };
    let loaded = ["attention.output.LayerNorm.weight", "attention.output.LayerNorm.bias"];
    let mut recorder = Recorder::new().torch_names_from(loaded, &[(r"\.LayerNorm\.", ".layer_norm.")]).unwrap();
    recorder.params(&model).unwrap().loss_fn(&CrossEntropyLossConfig::new().init(&device), Reduction::Mean).unwrap();
    let dump = recorder.into_dump(Dump::builder()).unwrap();
    let burn = &convention["settings"]["burn"];
    for key in ["modules", "loss_fn"] {
        let recorded: Value = serde_json::from_str(&dump.metadata()[key]).unwrap();
        assert_eq!(recorded, burn[key], "{key}");
    }
}
