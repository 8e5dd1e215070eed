from pathlib import Path

from pita_lab.compile_fail import normalise, rendered_errors

SOURCE = "experiments/p12-loss-not-reduced/compile_fail/ce12.rs"
RAW = """error[E0308]: mismatched types
  --> experiments/p12-loss-not-reduced/compile_fail/ce12.rs:12:34
   |
12 |     let _grads = backward_scalar(per_sample);
   |                  --------------- ^^^^^^^^^^ expected `1`, found `2`
note: function defined here
  --> /abs/checkout/crates/pita/src/guard.rs:18:8
   |
18 | pub fn backward_scalar(loss: Tensor<1>) -> Gradients {
""".replace("Gradients {\n", "Gradients {   \n")  # rustc's trailing spaces, which normalise drops


def test_normalise_keeps_the_case_lines_and_masks_other_files():
    text = normalise(RAW, SOURCE, Path("/abs/checkout"))
    assert "ce12.rs:12:34" in text and "12 |     let _grads" in text
    assert "crates/pita/src/guard.rs:LL:CC" in text and "LL | pub fn backward_scalar" in text
    assert "/abs/checkout" not in text and not any(line.endswith(" ") for line in text.splitlines())


def test_rendered_errors_skip_warnings_and_the_abort_summary():
    import json

    def message(level, text):
        return json.dumps({"reason": "compiler-message", "message": {"level": level, "message": text, "rendered": text + "\n"}})

    stream = "\n".join([message("warning", "unused"), message("error", "mismatched types"), message("error", "aborting due to 1 previous error"), "not json"])
    assert rendered_errors(stream) == "mismatched types\n"


def test_normalise_masks_machine_specific_paths():
    raw = "note: method defined here\n  --> /root/.cargo/registry/src/index.crates.io-1949cf8c6b5b557f/burn-nn-0.22.1/src/loss/x.rs:9:12\n"
    text = normalise(raw, SOURCE, Path("/abs/checkout"))
    assert "--> $CARGO_REGISTRY/burn-nn-0.22.1/src/loss/x.rs:LL:CC" in text and "/root" not in text


def test_a_help_suggestion_after_a_foreign_note_keeps_the_examples_lines():
    raw = RAW + "help: consider borrowing here\n   |\n12 |     let _grads = backward_scalar(&per_sample);\n"
    text = normalise(raw, SOURCE, Path("/abs/checkout"))
    assert text.splitlines()[-1] == "12 |     let _grads = backward_scalar(&per_sample);"
