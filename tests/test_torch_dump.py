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


def test_a_stale_json_twin_is_removed_when_the_dump_is_too_large(tmp_path, monkeypatch):
    import pita.torch_dump

    write_torch_dump(tmp_path / "d.safetensors", {"small": torch.zeros(2)})
    monkeypatch.setattr(pita.torch_dump, "MAX_JSON_ELEMENTS", 4)
    monkeypatch.setattr(pita.dump, "MAX_JSON_ELEMENTS", 4)
    with pytest.warns(UserWarning, match="no JSON form written beside it .*; the d.json an earlier dump left beside it was removed$") as caught:
        write_torch_dump(tmp_path / "d.safetensors", {"large": torch.zeros(5)})
    assert sorted(p.name for p in tmp_path.iterdir()) == ["d.safetensors"]
    assert caught[0].filename == __file__  # the caller's line, not pita's (whose lines move)


def test_a_failed_json_write_leaves_no_stale_twin_and_says_so(tmp_path):
    """The JSON form of 10,000 floats (~500 kB) cannot be written under a 200 kB file-size
    limit, while the safetensors form (40 kB) can: a real write failure, as on a full disk."""
    import resource
    import signal

    write_torch_dump(tmp_path / "d.safetensors", {"old": torch.zeros(2)})
    limits, handler = resource.getrlimit(resource.RLIMIT_FSIZE), signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
    resource.setrlimit(resource.RLIMIT_FSIZE, (200_000, limits[1]))
    try:
        with pytest.raises(UsageError, match=r"d.safetensors is written, but not its JSON form, and no earlier one is left beside it: "
                                             r".*d.json: cannot write \(File too large\)"):
            write_torch_dump(tmp_path / "d.safetensors", {"new": torch.linspace(0, 1, 10_000)})
    finally:
        resource.setrlimit(resource.RLIMIT_FSIZE, limits)
        signal.signal(signal.SIGXFSZ, handler)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["d.safetensors"]  # no twin, no temporary file
    assert list(read_dump(tmp_path / "d.safetensors").tensors) == ["new"]


@pytest.mark.filterwarnings("ignore:Sparse CSR tensor support is in beta")
def test_a_sparse_or_nested_tensor_is_refused_with_its_name(tmp_path):
    with pytest.raises(UsageError, match=r"^tensor 's': a sparse_coo tensor; a dump holds dense tensors \(densify it: tensor.to_dense\(\)\)$"):
        write_torch_dump(tmp_path / "s.safetensors", {"s": torch.eye(3).to_sparse()})
    with pytest.raises(UsageError, match="^tensor 'c': a sparse_csr tensor"):
        write_torch_dump(tmp_path / "c.safetensors", {"c": torch.eye(3).to_sparse_csr()})
    with pytest.raises(UsageError, match="^tensor 'n': a nested tensor"):
        write_torch_dump(tmp_path / "n.safetensors", {"n": torch.nested.nested_tensor([torch.ones(2), torch.ones(3)], layout=torch.jagged)})
    assert list(tmp_path.iterdir()) == []


def test_an_unusable_path_is_refused_before_anything_is_written(tmp_path):
    import os
    import stat

    os.mkfifo(tmp_path / "fifo.safetensors")
    (tmp_path / "twin.json").mkdir()
    for path, why in ((tmp_path / "fifo.safetensors", "a FIFO, not a regular file"), (tmp_path / "twin.safetensors", "twin.json: a folder")):
        with pytest.raises(UsageError, match=why):
            write_torch_dump(path, {"w": torch.ones(2)})
    assert stat.S_ISFIFO(os.stat(tmp_path / "fifo.safetensors").st_mode)  # not replaced by a regular file
    assert sorted(p.name for p in tmp_path.iterdir()) == ["fifo.safetensors", "twin.json"]
