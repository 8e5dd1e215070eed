"""The claims p10k declares in its own experiment.py fail when what they state changes."""

import dataclasses

import numpy as np

from pita.compare import ComparisonResult, TensorResult
from pita.dump import Dump, write_dump
from pita.tolerance import Tolerance
from pita_lab import catalog
from pita_lab.record import ComparisonRun, RunRecord


def claim(claim_id):
    return next(c for c in catalog.get("p10k").claims if c.id == claim_id)


def record(comparisons=()):
    return RunRecord("p10k", {}, "", [], list(comparisons), [], [], [])


def shapes(*pairs):
    """A comparison of torch-ref with burn-port whose tensors have these (reference, candidate) shapes."""
    tensors = [TensorResult(name=f"t{i}", ok=True, n=0, shape=ref, candidate_shape=cand) for i, (ref, cand) in enumerate(pairs)]
    result = ComparisonResult("torch-ref.safetensors", "burn-port.safetensors", Tolerance(), tensors, [], [])
    return ComparisonRun("torch-ref", "burn-port", [], 0, "", result)


def test_same_shapes_needs_every_shape_equal():
    sizes = claim("sizes-agree")
    assert sizes.check(record([shapes(([1, 1, 7, 7], [1, 1, 7, 7]), ([1, 1, 3, 3], [1, 1, 3, 3]))]), None).ok
    assert not sizes.check(record([shapes(([1, 1, 7, 7], [1, 1, 7, 7]), ([1, 1, 3, 3], [1, 1, 4, 4]))]), None).ok
    assert not sizes.check(record([shapes()]), None).ok  # nothing compared proves nothing


def test_bit_identical_needs_every_bit_and_the_same_names(tmp_path):
    values = np.float32([0.1, -0.2, 0.3])
    write_dump(Dump({"a": values, "b": values}), tmp_path / "burn-port.safetensors")
    write_dump(Dump({"a": values, "b": values.copy()}), tmp_path / "burn-size.safetensors")
    identical = claim("size-changes-nothing")
    assert identical.check(record(), tmp_path).ok
    one_ulp = values.copy()
    one_ulp[1] = np.nextafter(one_ulp[1], np.float32(0))
    write_dump(Dump({"a": values, "b": one_ulp}), tmp_path / "burn-size.safetensors")
    assert not identical.check(record(), tmp_path).ok
    write_dump(Dump({"a": values, "b": values, "c": values}), tmp_path / "burn-size.safetensors")
    assert not identical.check(record(), tmp_path).ok


def test_struct_lacks_field_reads_the_locked_source():
    lacks = claim("burn-has-no-antialias")
    assert lacks.check(record(), None).ok
    assert not dataclasses.replace(lacks, field="align_corners").check(record(), None).ok  # a field it has
    assert not dataclasses.replace(lacks, name="NoSuchStruct").check(record(), None).ok
