import json
import subprocess
import sys

import numpy as np
import pytest

from pita.dtypes import dtype_name
from pita.dump import read_dump
from pita.errors import UsageError

torch = pytest.importorskip("torch")
from pita.torch_dump import write_torch_dump  # noqa: E402

TORCH_DTYPES = {
    torch.float64: "F64", torch.float32: "F32", torch.float16: "F16", torch.bfloat16: "BF16",
    torch.int64: "I64", torch.int32: "I32", torch.int16: "I16", torch.int8: "I8", torch.uint8: "U8", torch.bool: "BOOL",
}


@pytest.mark.parametrize("suffix", [".safetensors", ".json", ".npz"])
@pytest.mark.parametrize("dtype", sorted(TORCH_DTYPES, key=str))
def test_every_torch_dtype_keeps_its_dtype_and_bits(tmp_path, suffix, dtype):
    values = torch.tensor([[0.1, -2.5, float("inf")], [float("nan"), -0.0, 3e-39]])
    tensor = values.to(dtype) if dtype.is_floating_point else torch.tensor([[1, 0, 7], [0, 1, 2]]).to(dtype)
    path = write_torch_dump(tmp_path / f"torch{suffix}", {"t": tensor, "s": tensor[0, 0]}, experiment="x")
    for form in [path] + ([path.with_suffix(".json")] if suffix == ".safetensors" else []):
        dump = read_dump(form)
        assert dump.metadata["framework"] == "torch" and dump.metadata["experiment"] == "x"
        for name, expected in (("t", tensor), ("s", tensor[0, 0])):
            read = np.asarray(dump.tensors[name])
            assert dtype_name(read.dtype) == TORCH_DTYPES[dtype] and read.shape == tuple(expected.shape)
            raw = expected.contiguous().view(torch.uint8) if expected.dim() else expected.reshape(1).view(torch.uint8)
            assert read.tobytes() == raw.numpy().tobytes()


def test_bf16_written_by_torch_reads_back_in_torch(tmp_path):
    from safetensors.torch import load_file

    tensor = torch.tensor([1.0, 0.1, -3.0]).to(torch.bfloat16)
    write_torch_dump(tmp_path / "t.safetensors", {"w": tensor})
    assert torch.equal(load_file(tmp_path / "t.safetensors")["w"], tensor)
    assert json.loads((tmp_path / "t.json").read_text())["tensors"]["w"]["bits"] == ["3f80", "3dcd", "c040"]


def test_tensors_needing_grad_on_any_layout_are_written(tmp_path):
    weight = torch.arange(6.0, requires_grad=True).reshape(2, 3).t()  # not contiguous
    path = write_torch_dump(tmp_path / "w.npz", {"w": weight})
    assert read_dump(path).tensors["w"].tolist() == weight.tolist()


def test_a_dtype_no_dump_holds_is_refused_with_its_name(tmp_path):
    with pytest.raises(UsageError, match="tensor 'c'"):
        write_torch_dump(tmp_path / "c.safetensors", {"c": torch.zeros(2, dtype=torch.complex64)})
    with pytest.raises(UsageError, match="tensor 'f8'"):
        write_torch_dump(tmp_path / "f8.safetensors", {"f8": torch.zeros(2).to(torch.float8_e4m3fn)})
    assert list(tmp_path.iterdir()) == []


def test_the_json_twin_is_skipped_with_a_warning_when_it_would_be_too_large(tmp_path, monkeypatch):
    import pita.torch_dump

    monkeypatch.setattr(pita.torch_dump, "MAX_JSON_ELEMENTS", 4)
    monkeypatch.setattr(pita.dump, "MAX_JSON_ELEMENTS", 4)
    with pytest.warns(UserWarning, match="no JSON form"):
        write_torch_dump(tmp_path / "big.safetensors", {"w": torch.zeros(5)})
    assert sorted(p.name for p in tmp_path.iterdir()) == ["big.safetensors"]


def test_torch_is_imported_only_when_a_dump_is_written():
    code = "import sys, pita.torch_dump; assert 'torch' not in sys.modules"
    assert subprocess.run([sys.executable, "-c", code], capture_output=True).returncode == 0
