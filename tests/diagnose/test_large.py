"""Rules on tensors of any size: left in their file (`FileTensor`), read only through bounded
samples, never whole, and saying when a finding rests on a sample."""

import numpy as np
import pytest

from pita import diagnose
from pita.compare import DEFAULT_TOLERANCE, compare_dumps
from pita.diagnose.base import SAMPLE, Context, differ_only_in_size_one_axes
from pita.dtypes import from_float64, widen
from pita.dump import Dump, read_dump, write_dump
from pita.filetensor import FileTensor
from pita.report import render_text
from pita.stats import measure

RNG = np.random.default_rng(11)
READ_LIMIT = 8 * SAMPLE  # elements all rules together may read from a pair


class ReadGuard:
    """Once armed, counts the elements each `take` reads from a FileTensor and fails any whole
    or chunked read."""

    def __init__(self, monkeypatch):
        self.monkeypatch, self.takes = monkeypatch, []

    def arm(self):
        original, takes = FileTensor.take, self.takes

        def counted(tensor, flat_indices):
            takes.append(np.asarray(flat_indices).size)
            return original(tensor, flat_indices)

        def refused(tensor, *args, **kwargs):
            raise AssertionError("a FileTensor was read whole or in chunks")

        self.monkeypatch.setattr(FileTensor, "take", counted)
        for method in ("read", "stream", "__array__"):
            self.monkeypatch.setattr(FileTensor, method, refused)


@pytest.fixture
def guard(monkeypatch):
    return ReadGuard(monkeypatch)


def on_disk(tmp_path, reference, candidate):
    """Both tensors written to safetensors files and read back, left in the files."""
    tensors = []
    for side, values in (("reference", reference), ("candidate", candidate)):
        write_dump(Dump({"t": values}), tmp_path / f"{side}.safetensors")
        tensors.append(read_dump(tmp_path / f"{side}.safetensors").tensors["t"])
    assert all(isinstance(t, FileTensor) for t in tensors)
    return tensors


WEIGHT = RNG.standard_normal((2049, 2049)).astype(np.float32)  # over 4M elements, and square
CUBE = RNG.standard_normal((64, 128, 130)).astype(np.float32)
VECTOR = RNG.standard_normal(300_000).astype(np.float32)
BATCH = RNG.standard_normal((4096, 300)).astype(np.float32)
SHUFFLE = RNG.permutation(4096)
ROW_FACTORS = RNG.uniform(0.99, 1.0, (4096, 1)).astype(np.float32)  # 4096 factors, about 16 sampled elements each
HALVES = np.r_[2048:4096, 0:2048]
PACKED = RNG.standard_normal((3 * 600, 600)).astype(np.float32)  # three square blocks, over 1M elements
OTHER_ROWS = RNG.standard_normal((2, 300)).astype(np.float32)


def rows_replaced(values: np.ndarray) -> np.ndarray:
    changed = values.copy()
    changed[[17, 2000]] = OTHER_ROWS
    return changed


CASES = {
    "transpose": (WEIGHT, lambda w: w.T.copy(), "transpose", {"axes": [1, 0]}),
    "axes": (CUBE, lambda c: np.ascontiguousarray(np.transpose(c, (2, 0, 1))), "permutation", {"axes": [2, 0, 1]}),
    "rows": (BATCH, lambda b: b[SHUFFLE], "permutation", {"rows": SHUFFLE.tolist()}),
    "scale": (VECTOR, lambda v: v * np.float32(4), "scale", {"factor": pytest.approx(4.0)}),
    "slice_scale": (BATCH, lambda b: b * ROW_FACTORS, "slice_scale", {"constant_along": [1], "slices": 4096}),
    "block_permutation": (BATCH, lambda b: b[HALVES], "block_permutation", {"k": 2, "permutation": [1, 0]}),
    "block_transpose": (PACKED, lambda p: np.concatenate([p[:600], p[600:1200].T, p[1200:]]), "block_transpose", {"k": 3, "transposed": [1]}),
    "confined_rows": (BATCH, rows_replaced, "rows", {"rows": [17, 2000], "count": 2}),
    "sign": (VECTOR, lambda v: -v, "sign", {}),
    "offset": (VECTOR, lambda v: v + np.float32(0.5), "offset", {"value": pytest.approx(0.5, abs=1e-6)}),
    "nan": (VECTOR, lambda v: np.where(np.arange(v.size) % 1000 == 7, np.float32(np.nan), v), "nan", {"side": "candidate"}),
    "rounding": (VECTOR, lambda v: widen(from_float64(v, "BF16")), "rounding", {"level": "bfloat16", "side": "candidate"}),
}


@pytest.mark.parametrize("case", sorted(CASES))
def test_every_rule_finds_its_case_in_a_large_file_from_a_bounded_sample(case, tmp_path, guard):
    values, change, kind, params = CASES[case]
    reference, candidate = on_disk(tmp_path, values, change(values))
    compared = differ_only_in_size_one_axes(reference.shape, candidate.shape)
    stats = measure(reference, candidate, DEFAULT_TOLERANCE) if compared else None  # the one full pass
    guard.arm()
    found = {d.kind: d for d in diagnose.explain(reference, candidate, DEFAULT_TOLERANCE, Context(), stats)}
    assert kind in found, found
    for name, value in params.items():
        assert found[kind].params[name] == value
    assert 0 < found[kind].sample <= SAMPLE
    assert found[kind].message.endswith(f"(on a sample of {found[kind].sample} of {values.size} elements)")
    assert max(guard.takes) <= SAMPLE and sum(guard.takes) <= READ_LIMIT


def test_unrelated_large_tensors_are_not_explained(tmp_path, guard):
    reference, candidate = on_disk(tmp_path, WEIGHT, RNG.standard_normal(WEIGHT.shape).astype(np.float32))
    stats = measure(reference, candidate, DEFAULT_TOLERANCE)
    guard.arm()
    assert diagnose.explain(reference, candidate, DEFAULT_TOLERANCE, Context(), stats) == []
    assert sum(guard.takes) <= READ_LIMIT


def test_a_transposed_large_weight_is_reported_as_one(tmp_path, monkeypatch):
    # burn's Linear [in, out] against torch's [out, in], at a size diagnosed on a sample
    write_dump(Dump({"fc.weight": WEIGHT}), tmp_path / "torch.safetensors")
    write_dump(Dump({"fc.weight": WEIGHT.T.copy()}), tmp_path / "burn.safetensors")
    reference, candidate = read_dump(tmp_path / "torch.safetensors"), read_dump(tmp_path / "burn.safetensors")
    monkeypatch.setattr(FileTensor, "__array__", lambda *args, **kwargs: pytest.fail("a FileTensor was read whole"))
    text = render_text(compare_dumps(reference, candidate))
    assert "diagnosis transpose: candidate = reference with axes 0 and 1 swapped" in text
    assert f"of {WEIGHT.size} elements)" in text
