"""Each claim must fail when the behaviour it states changes."""

import numpy as np
import pytest

from pita.compare import ComparisonResult, TensorResult
from pita.diagnose.base import Diagnosis
from pita.dump import Dump, write_dump
from pita.report import render_text
from pita.tolerance import Tolerance
from pita.trace import Divergence, LoadAudit, TraceResult
from pita_lab.claims import (
    Accepts,
    CompileFails,
    CountsMultiply,
    DefaultsDiffer,
    Diagnosed,
    DiffersOnlyAtKinks,
    KeptInitial,
    Loaded,
    Matches,
    Mismatches,
    OnlyTensorsDiffer,
    Panics,
    Raises,
    Relates,
    SameHparam,
    ScaledByMetadata,
    SmallerInSize,
    TensorsCompare,
    Traced,
    Warns,
    panic_message,
    parse_default,
    show_default,
)
from pita_lab.record import ComparisonRun, CompileFailRun, ProgramRun, RunRecord, TraceRun, last_line

PANIC = "thread 'main' panicked at src/bin/p12.rs:9:3:\nassertion failed: loss must be reduced\n  left: [4]\nnote: run with `RUST_BACKTRACE=1`\n"


def record(programs=(), comparisons=(), compile_fail=()):
    return RunRecord("p00", {}, "", list(programs), list(comparisons), list(compile_fail), [], [])


def program(side="torch", variant="v", exit_code=0, stdout="", stderr="", dump=None):
    return ProgramRun(side, variant, [], exit_code, stdout, stderr, dump)


def finding(kind, **params):
    return Diagnosis(kind, params, message=f"{kind} found", residual=0.0)


def tensor(name, ok, *diagnosis):
    return TensorResult(name=name, ok=ok, n=1, shape=[1], candidate_shape=[1], dtype="F32", candidate_dtype="F32",
                        mismatched=0 if ok else 1, max_abs_diff=0.0 if ok else 1.0, diagnosis=list(diagnosis))


def compared(*tensors):
    """A comparison of torch-mean with burn-x as `pita compare` records it: what it printed, how it exited, its result."""
    result = ComparisonResult("torch-mean.safetensors", "burn-x.safetensors", Tolerance(), list(tensors), [], [])
    return ComparisonRun("torch-mean", "burn-x", [], 0 if result.ok else 1, render_text(result), result)


def comparison(exit_code, *diagnosis):
    return compared(tensor("w", exit_code == 0, *diagnosis))


def check(claim, rec, out=None):
    return claim.check(rec, out).ok


def test_raises_needs_the_exact_last_traceback_line_and_a_failure():
    claim = Raises("r", "", "torch", "v", "RuntimeError", "only scalars")
    assert check(claim, record([program(exit_code=1, stderr="Traceback\nRuntimeError: only scalars\n")]))
    assert not check(claim, record([program(exit_code=1, stderr="RuntimeError: something else\n")]))
    assert not check(claim, record([program(exit_code=0, stdout="RuntimeError: only scalars\n")]))


def test_accepts_needs_exit_0_and_the_dump():
    claim = Accepts("a", "", "burn", "v")
    assert check(claim, record([program("burn", exit_code=0, dump="burn-v.safetensors")]))
    assert not check(claim, record([program("burn", exit_code=0)]))
    assert not check(claim, record([program("burn", exit_code=1, dump="burn-v.safetensors")]))


def test_panics_needs_exit_101_and_the_message_in_the_panic():
    claim = Panics("p", "", "burn", "v", "loss must be reduced")
    assert check(claim, record([program("burn", exit_code=101, stderr=PANIC)]))
    assert not check(claim, record([program("burn", exit_code=101, stderr=PANIC.replace("loss", "grad"))]))
    assert not check(claim, record([program("burn", exit_code=1, stderr=PANIC)]))
    assert panic_message(PANIC) == "assertion failed: loss must be reduced\n  left: [4]"


def test_matches_and_mismatches_read_the_exit_code_and_verdict():
    ok, bad = comparison(0), comparison(1)
    assert check(Matches("m", "", "torch-mean", "burn-x"), record(comparisons=[ok]))
    assert not check(Matches("m", "", "torch-mean", "burn-x"), record(comparisons=[bad]))
    assert check(Mismatches("n", "", "torch-mean", "burn-x"), record(comparisons=[bad]))
    assert not check(Mismatches("n", "", "torch-mean", "burn-x"), record(comparisons=[ok]))
    bad.exit_code = 0  # a verdict and an exit code that disagree hold neither claim
    assert not check(Matches("m", "", "torch-mean", "burn-x"), record(comparisons=[bad]))
    assert not check(Mismatches("n", "", "torch-mean", "burn-x"), record(comparisons=[bad]))


def test_matches_and_mismatches_observe_the_printed_verdict_from_the_result():
    for run in (comparison(0), comparison(1)):
        observed = Mismatches("n", "", "torch-mean", "burn-x").check(record(comparisons=[run]), None).observed
        assert observed == f"{last_line(run.stdout)}, exit {run.exit_code}"
        run.stdout = "reworded\n"  # read from the result, never from the wording of what was printed
        assert Mismatches("n", "", "torch-mean", "burn-x").check(record(comparisons=[run]), None).observed == observed


def test_a_comparison_that_could_not_run_observes_its_error_and_no_tensors():
    failed = ComparisonRun("torch-mean", "burn-x", [], 2, "compare torch-mean burn-x could not run: error: gone\n", None)
    rec = record(comparisons=[failed])
    matches = Matches("m", "", "torch-mean", "burn-x").check(rec, None)
    assert not matches.ok and matches.observed == "compare torch-mean burn-x could not run: error: gone, exit 2"
    assert TensorsCompare("t", "", "torch-mean", "burn-x", ("w",)).check(rec, None).observed == "w missing"
    assert Diagnosed("d", "", "torch-mean", "burn-x", "scale").check(rec, None).observed == "no tensors"


def test_compile_fails_needs_the_code_the_detail_and_the_snapshot():
    claim = CompileFails("c", "", "ce00", "E0308", "expected `1`, found `2`")
    diag = "error[E0308]: mismatched types\n expected `1`, found `2`\n"
    assert check(claim, record(compile_fail=[CompileFailRun("ce00", 101, diag, diag, True)]))
    assert not check(claim, record(compile_fail=[CompileFailRun("ce00", 101, diag, "old", False)]))
    assert not check(claim, record(compile_fail=[CompileFailRun("ce00", 101, diag.replace("E0308", "E0599"), diag, True)]))
    assert not check(claim, record(compile_fail=[CompileFailRun("ce00", 0, "", "", True)]))


@pytest.fixture
def scaled_dumps(tmp_path):
    meta = {"batch_size": "4"}
    write_dump(Dump({"w": np.float32([0.1, -0.2])}, meta), tmp_path / "torch-mean.safetensors")
    write_dump(Dump({"w": np.float32([0.4, -0.8])}, meta), tmp_path / "burn-x.safetensors")
    write_dump(Dump({"w": np.float32([0.3, -0.6])}, meta), tmp_path / "burn-y.safetensors")
    return tmp_path


def test_scaled_by_metadata_measures_every_element(scaled_dumps):
    assert check(ScaledByMetadata("s", "", "torch-mean", "burn-x", "batch_size"), record(), scaled_dumps)
    assert not check(ScaledByMetadata("s", "", "torch-mean", "burn-y", "batch_size"), record(), scaled_dumps)


def test_diagnosed_needs_the_named_factor_on_every_tensor(scaled_dumps):
    claim = Diagnosed("d", "", "torch-mean", "burn-x", "scale", "batch_size")
    right = comparison(1, finding("scale", factor=4.0))
    wrong = comparison(1, finding("scale", factor=3.0))
    assert check(claim, record(comparisons=[right]), scaled_dumps)
    assert not check(claim, record(comparisons=[wrong]), scaled_dumps)
    assert not check(claim, record(comparisons=[comparison(1)]), scaled_dumps)
    assert not check(claim, record(comparisons=[comparison(0)]), scaled_dumps)  # nothing to diagnose


def test_diagnosed_checks_named_parameters(scaled_dumps):
    found = comparison(1, finding("transpose", axes=[1, 0]))
    assert check(Diagnosed("d", "", "torch-mean", "burn-x", "transpose", params=(("axes", [1, 0]),)), record(comparisons=[found]))
    assert not check(Diagnosed("d", "", "torch-mean", "burn-x", "transpose", params=(("axes", [0, 1]),)), record(comparisons=[found]))


def rows(*verdicts):
    """A comparison whose tensors pass or fail as given: ("w", True), ("b", False)."""
    return compared(*(tensor(name, ok) for name, ok in verdicts))


def test_tensors_compare_checks_only_the_named_tensors():
    rec = record(comparisons=[rows(("out", True), ("grad", False))])
    assert check(TensorsCompare("t", "", "torch-mean", "burn-x", ("out",)), rec)
    assert not check(TensorsCompare("t", "", "torch-mean", "burn-x", ("grad",)), rec)
    assert check(TensorsCompare("t", "", "torch-mean", "burn-x", ("grad",), ok=False), rec)
    assert not check(TensorsCompare("t", "", "torch-mean", "burn-x", ("absent",)), rec)


def test_only_tensors_differ_needs_exactly_that_set():
    rec = record(comparisons=[rows(("out", True), ("grad", False))])
    assert check(OnlyTensorsDiffer("o", "", "torch-mean", "burn-x", ("grad",)), rec)
    assert not check(OnlyTensorsDiffer("o", "", "torch-mean", "burn-x", ("out",)), rec)
    assert not check(OnlyTensorsDiffer("o", "", "torch-mean", "burn-x", ("grad",)), record(comparisons=[rows(("grad", False))]))


@pytest.fixture
def int_dumps(tmp_path):
    write_dump(Dump({"q": np.float32([-3.5, 3.5])}, {"eps": "1e-08"}), tmp_path / "torch-div.safetensors")
    write_dump(Dump({"q": np.float32([-3.0, 3.0])}, {"eps": "1e-05"}), tmp_path / "burn-div.safetensors")
    return tmp_path


def test_relates_applies_the_named_relation(int_dumps):
    assert check(Relates("r", "", "torch-div", "burn-div", "q", "trunc"), record(), int_dumps)
    assert not check(Relates("r", "", "torch-div", "burn-div", "q", "floor"), record(), int_dumps)


def test_smaller_in_size_and_defaults_differ(int_dumps):
    assert check(SmallerInSize("s", "", "torch-div", "burn-div", "q"), record(), int_dumps)
    assert not check(SmallerInSize("s", "", "torch-div", "burn-div", "q", larger=True), record(), int_dumps)


def test_same_hparam_reads_the_programs_metadata():
    torch_run, burn_run = program("torch", "a"), program("burn", "a")
    torch_run.metadata, burn_run.metadata = {"eps": "1e-08"}, {"eps": "1e-08"}
    assert check(SameHparam("h", "", "torch-a", "burn-a", "eps"), record([torch_run, burn_run]))
    burn_run.metadata = {"eps": "1e-05"}
    assert not check(SameHparam("h", "", "torch-a", "burn-a", "eps"), record([torch_run, burn_run]))
    assert check(SameHparam("h", "", "torch-a", "burn-a", "eps", same=False), record([torch_run, burn_run]))


def test_counts_multiply_needs_the_exact_product_of_the_recorded_counts():
    run = program("burn", "a")
    run.metadata = {"micro_batches": "16", "scheduler_steps": "8", "accumulation": "2"}
    per_update = CountsMultiply("c", "", "burn", "a", "micro_batches", ("scheduler_steps", "accumulation"))
    assert check(per_update, record([run]))
    assert not check(CountsMultiply("c", "", "burn", "a", "micro_batches", ("scheduler_steps",)), record([run]))
    run.metadata = {"micro_batches": "16", "scheduler_steps": "16", "accumulation": "2"}  # stepped per micro-batch
    assert not check(per_update, record([run]))
    run.metadata = {"micro_batches": "16", "accumulation": "2"}
    assert not check(per_update, record([run]))  # a count the run did not record


def test_warns_needs_the_warning_and_exit_0():
    claim = Warns("w", "", "torch", "v", "UserWarning", "deprecated")
    assert check(claim, record([program(stderr="x.py:3: UserWarning: .T is deprecated here\n")]))
    assert not check(claim, record([program(stderr="")]))
    assert not check(claim, record([program(exit_code=1, stderr="UserWarning: deprecated\n")]))


def test_differs_only_at_kinks(tmp_path):
    x = np.float32([-1.0, -0.5, 0.0, 0.5, 1.0])
    meta = {"clamp.kinks": "-0.5,0.5"}
    write_dump(Dump({"clamp.x": x, "clamp.out": x, "clamp.grad": np.float32([0, 0, 1, 0, 0])}, meta), tmp_path / "torch-ref.safetensors")
    write_dump(Dump({"clamp.x": x, "clamp.out": x, "clamp.grad": np.float32([0, 1, 1, 1, 0])}, meta), tmp_path / "burn-port.safetensors")
    write_dump(Dump({"clamp.x": x, "clamp.out": x, "clamp.grad": np.float32([1, 1, 1, 1, 0])}, meta), tmp_path / "burn-other.safetensors")
    assert check(DiffersOnlyAtKinks("k", "", "torch-ref", "burn-port", ("clamp",)), record(), tmp_path)
    assert not check(DiffersOnlyAtKinks("k", "", "torch-ref", "burn-other", ("clamp",)), record(), tmp_path)


def test_relates_within_ulps_counts_float32_ulps(tmp_path):
    w = np.float32([1.5, -0.25, 3.0])
    write_dump(Dump({"w": w}), tmp_path / "torch-a.safetensors")
    write_dump(Dump({"w": np.nextafter(np.nextafter(w, np.float32(9)), np.float32(9))}), tmp_path / "burn-a.safetensors")
    assert check(Relates("r", "", "torch-a", "burn-a", "w", "identity", ulps=2), record(), tmp_path)
    assert not check(Relates("r", "", "torch-a", "burn-a", "w", "identity", ulps=1), record(), tmp_path)
    assert not check(Relates("r", "", "torch-a", "burn-a", "w", "identity"), record(), tmp_path)


@pytest.mark.parametrize("claim", [
    Relates("r", "", "torch-gone", "burn-gone", "w", "identity"),
    ScaledByMetadata("s", "", "torch-gone", "burn-gone", "batch_size"),
    Matches("m", "", "torch-gone", "burn-gone"),
    Accepts("a", "", "burn", "gone"),
    CompileFails("c", "", "ce99", "E0308", "x"),
])
def test_a_claim_that_cannot_observe_its_fact_fails_with_the_reason(claim, tmp_path):
    result = claim.check(record(), tmp_path)
    assert not result.ok
    assert result.observed.startswith("cannot observe: ") and str(tmp_path) not in result.observed


def traced(exit_code, first=None):
    result = TraceResult("", first, [], LoadAudit([], [], []), "torch-record.safetensors", "burn-port.safetensors", Tolerance())
    rec = record()
    rec.traces = [TraceRun("torch-record", "burn-port", ["pita", "trace"], exit_code, "", result)]
    return rec


def divergence(phase, name, *kinds):
    return Divergence(phase, name, "mismatch", True, None, [], [], tensor(name, False, *(finding(kind) for kind in kinds)))


def test_traced_needs_the_phase_the_tensor_and_the_diagnosis():
    first = divergence("parameters", "param/fc.weight", "transpose")
    claim = Traced("t", "", "torch-record", "burn-port", phase="parameters", name="param/fc.weight", kind="transpose")
    assert check(claim, traced(1, first))
    assert not check(claim, traced(0, first))
    assert not check(claim, traced(1, divergence("forward", "param/fc.weight", "transpose")))
    assert not check(claim, traced(1, divergence("parameters", "param/fc.bias", "transpose")))
    assert not check(claim, traced(1, divergence("parameters", "param/fc.weight", "scale")))
    assert not check(claim, traced(0))
    prefix = Traced("t", "", "torch-record", "burn-port", phase="parameters", name="param/")
    assert check(prefix, traced(1, first))


def test_traced_can_also_need_the_random_masks_and_the_settings_found():
    first = divergence("forward", "act/drop")
    masks = Traced("t", "", "torch-record", "burn-port", phase="forward", name="act/drop", random_masks=True)
    rec = traced(1, first)
    assert not check(masks, rec)
    rec.traces[0].result.random_masks = {"reference": 2, "first": "mask1/drop", "replayed": 0}
    assert check(masks, rec)
    eps = Traced("t", "", "torch-record", "burn-port", phase="forward", name="act/drop", settings=("eps",))
    assert not check(eps, rec)
    rec.traces[0].result.settings = {"compared": 6, "differences": [{"name": "weight_decay", "reference": 0.01, "candidate": 1e-4}]}
    assert not check(eps, rec)
    rec.traces[0].result.settings["differences"].append({"name": "eps", "reference": 1e-8, "candidate": 1e-5})
    result = eps.check(rec, None)
    assert result.ok and result.observed == "forward act/drop, exit 1; settings differ: weight_decay, eps", result.observed


def test_traced_without_a_phase_claims_no_divergence():
    claim = Traced("t", "", "torch-record", "burn-port")
    assert check(claim, traced(0))
    assert not check(claim, traced(1, divergence("step", "step1/w")))
    assert not check(claim, record())  # no such trace run: cannot observe


def defaults_record(torch_value: str, burn_value: str, key: str = "d"):
    torch_run, burn_run = program("torch", "ref"), program("burn", "port")
    torch_run.metadata, burn_run.metadata = {key: torch_value}, {key: burn_value}
    return record([torch_run, burn_run])


@pytest.mark.parametrize("torch_value, burn_value", [
    ("1e-08", "0.00001"),  # numbers: Adam's epsilon
    ("relu", "Gelu"),  # names: an activation
    ("False", "true"),  # booleans, as Python and Rust print them
    ("None", "true"),  # PyTorch's None against a burn flag
])
def test_defaults_differ_holds_when_the_recorded_defaults_differ(torch_value, burn_value):
    claim = DefaultsDiffer("d", "", "torch-ref", "burn-port", "d", "设置")
    result = claim.check(defaults_record(torch_value, burn_value), None)
    assert result.ok, result.observed
    assert result.facts == {"setting": "设置", "key": "d", "torch": parse_default(torch_value), "burn": parse_default(burn_value)}


@pytest.mark.parametrize("torch_value, burn_value", [
    ("0.1", "0.1"),
    ("0.1", "0.10000000149011612"),  # the same default once burn keeps it in f32
    ("gelu", "Gelu"),  # one activation, spelled by two languages
    ("False", "false"),
    ("None", "None"),
])
def test_defaults_differ_fails_when_the_defaults_are_equal(torch_value, burn_value):
    claim = DefaultsDiffer("d", "", "torch-ref", "burn-port", "d", "设置")
    assert not claim.check(defaults_record(torch_value, burn_value), None).ok


def test_defaults_differ_needs_a_torch_and_a_burn_dump_with_the_key():
    rec = defaults_record("1e-08", "0.00001")
    assert not check(DefaultsDiffer("d", "", "torch-ref", "torch-ref", "d", "设置"), rec)
    missing = DefaultsDiffer("d", "", "torch-ref", "burn-port", "eps", "设置").check(rec, None)
    assert not missing.ok and missing.facts is None and "no 'eps'" in missing.observed


def test_parse_and_show_defaults_keep_each_language_s_spelling():
    assert [parse_default(t) for t in ("True", "false", "None", "1e-5", "Gelu")] == [True, False, None, 1e-5, "Gelu"]
    assert show_default(False, "torch") == "False" and show_default(False, "burn") == "false"
    assert show_default(1e-5, "burn") == "1e-05" and show_default(None, "torch") == "None"


def load_record(**metadata):
    run = program("burn", "load")
    run.metadata = metadata
    return record([run])


def test_loaded_reads_the_load_report():
    everything = Loaded("l", "", "load")
    nothing = Loaded("l", "", "load", everything=False)
    full = load_record(applied="a.weight,a.bias", missing="", unused="")
    empty = load_record(applied="", missing="a.weight,a.bias", unused="a.weight_ih_l0")
    assert check(everything, full) and not check(nothing, full)
    assert check(nothing, empty) and not check(everything, empty)
    assert not check(everything, load_record(applied="a.weight", missing="a.bias", unused=""))
    assert not check(everything, load_record(applied="a.weight,a.bias", missing="", unused="extra"))
    assert not check(nothing, load_record(applied="a.weight", missing="a.bias", unused="a.weight_ih_l0"))
    assert not check(nothing, load_record(applied="", missing="a.weight", unused=""))


def test_kept_initial_needs_every_or_no_parameter_unchanged():
    kept, changed = KeptInitial("k", "", "load"), KeptInitial("k", "", "load", kept=False)
    all_kept = load_record(parameters="a.weight,a.bias", kept_initial="a.bias,a.weight")
    none_kept = load_record(parameters="a.weight,a.bias", kept_initial="")
    some_kept = load_record(parameters="a.weight,a.bias", kept_initial="a.bias")
    assert check(kept, all_kept) and not check(kept, none_kept) and not check(kept, some_kept)
    assert check(changed, none_kept) and not check(changed, all_kept) and not check(changed, some_kept)
    assert not check(kept, load_record(parameters="", kept_initial=""))
    assert not check(changed, load_record(parameters="", kept_initial=""))
