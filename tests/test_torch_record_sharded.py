"""pita.torch.record streams its recording into shards (docs/recording.md, "Streaming and shards"):
the same tensors as one file, nothing half-written when the run or a write fails."""

import json
import os

import numpy as np
import pytest

from pita.dump import read_dump
from pita.errors import UsageError

torch = pytest.importorskip("torch")
from test_torch_record import batch, tiny  # noqa: E402
from torch import nn  # noqa: E402

import pita.sharded_writer  # noqa: E402
import pita.torch  # noqa: E402


def record(path, steps=2, **options):
    options.setdefault("float64", False)
    model = tiny()
    tokens, targets = batch()
    return pita.torch.record(model, tokens, targets, nn.CrossEntropyLoss(), path, lambda p: torch.optim.Adam(p, lr=0.01), steps, **options)


def same(one, other) -> bool:
    return one.tensors.keys() == other.tensors.keys() and all(
        np.array_equal(np.asarray(one.tensors[n]), np.asarray(other.tensors[n])) for n in one.tensors)


def files(folder) -> list[str]:
    return sorted(os.listdir(folder))


@pytest.mark.parametrize("shard_bytes", [1000, 200])  # 200: most tensors are shards of their own, written from the live tensor
def test_a_sharded_recording_reads_back_equal_to_the_one_file(tmp_path, shard_bytes):
    whole = record(tmp_path / "whole" / "r.safetensors")
    sharded = record(tmp_path / "sharded" / "r.safetensors", shard_bytes=shard_bytes)
    assert whole == tmp_path / "whole" / "r.safetensors" and files(whole.parent) == ["r.json", "r.safetensors"]
    assert sharded == tmp_path / "sharded" / "r.safetensors.index.json"
    shards = [name for name in files(sharded.parent) if name != sharded.name]
    assert len(shards) > 3 and shards == [f"r-{n:05d}.safetensors" for n in range(1, len(shards) + 1)]
    one, many = read_dump(whole), read_dump(tmp_path / "sharded" / "r.safetensors")
    assert same(one, many) and one.metadata == many.metadata
    assert json.loads(sharded.read_text())["metadata"] == one.metadata
    for shard in shards:  # each shard says who wrote it and that it is a recording
        metadata = read_dump(sharded.parent / shard).metadata
        assert {"format", "framework", "framework_version", "recording"} <= set(metadata) and "execution_order" not in metadata
    other = read_dump(record(tmp_path / "other" / "r.safetensors", steps=1, shard_bytes=1000))
    assert not same(one, other)  # the negative control: another run reads back otherwise


def test_shards_hold_about_shard_bytes_each(tmp_path):
    index = json.loads(record(tmp_path / "r.safetensors", shard_bytes=4000).read_text())
    dump = read_dump(tmp_path / "r.safetensors")
    held = {}
    for name, shard in index["weight_map"].items():
        held[shard] = held.get(shard, 0) + np.asarray(dump.tensors[name]).nbytes
    assert all(size <= 4000 for size in held.values()) and sum(held.values()) > 2 * 4000, held


@pytest.mark.parametrize("failing_write", [1, 3])
def test_nothing_is_half_written_when_a_write_fails(tmp_path, monkeypatch, failing_write):
    earlier = record(tmp_path / "r.safetensors", shard_bytes=1000)
    before = {name: (tmp_path / name).read_bytes() for name in files(tmp_path)}
    original, calls = pita.sharded_writer.write_safetensors, []

    def failing(out, tensors, metadata):
        calls.append(len(tensors))
        if len(calls) == failing_write:
            out.write(b"\0" * 100)  # part of a shard, then the disk is full
            raise OSError(28, "No space left on device")
        original(out, tensors, metadata)

    monkeypatch.setattr(pita.sharded_writer, "write_safetensors", failing)
    with pytest.raises(UsageError, match="No space left on device"):
        record(tmp_path / "r.safetensors", shard_bytes=1000)
    assert len(calls) == failing_write
    assert {name: (tmp_path / name).read_bytes() for name in files(tmp_path)} == before  # the earlier recording, whole
    assert read_dump(earlier).tensors.keys() == read_dump(tmp_path / "r.safetensors").tensors.keys()


def test_nothing_is_left_when_the_run_raises_midway(tmp_path):
    calls = []

    def loss_fn(output, targets):
        calls.append(1)
        if len(calls) == 2:
            raise RuntimeError("the loss of step 2 fails")
        return nn.functional.cross_entropy(output, targets)

    model, (tokens, targets) = tiny(), batch()
    with pytest.raises(RuntimeError, match="step 2"):
        pita.torch.record(model, tokens, targets, loss_fn, tmp_path / "r.safetensors", torch.optim.Adam(model.parameters()), 2,
                          float64=False, shard_bytes=500)
    assert files(tmp_path) == []


def test_an_earlier_recording_in_the_other_form_is_removed_when_the_new_one_completes(tmp_path):
    record(tmp_path / "r.safetensors", shard_bytes=1000)
    record(tmp_path / "r.safetensors")  # one file now: the shards and index of before go
    assert files(tmp_path) == ["r.json", "r.safetensors"]
    record(tmp_path / "r.safetensors", shard_bytes=1000)  # shards again: the file and its JSON form go
    assert "r.safetensors" not in files(tmp_path) and "r.json" not in files(tmp_path) and "r.safetensors.index.json" in files(tmp_path)


def test_the_float64_run_is_sharded_as_its_reference64_says(tmp_path):
    written = record(tmp_path / "r.safetensors", float64=True, shard_bytes=3000)
    float32 = read_dump(written)
    assert float32.metadata["reference64"] == "r-float64.safetensors.index.json"
    float64 = read_dump(tmp_path / float32.metadata["reference64"])
    assert float64.tensors.keys() == float32.tensors.keys() and "reference64" not in float64.metadata
    assert np.asarray(float64.tensors["step2/fc1.weight"]).dtype == np.float64
    proc = pita_trace(tmp_path / "r.safetensors", tmp_path / "r.safetensors")
    assert proc.returncode == 0 and "judged against the float64 run r-float64.safetensors.index.json" in proc.stdout + proc.stderr


def pita_trace(reference, candidate):
    from conftest import pita

    return pita("trace", reference, candidate)


@pytest.mark.parametrize("shard_bytes", [0, -1, True, 1.5, "1MB"])
def test_shard_bytes_must_be_a_positive_integer(tmp_path, shard_bytes):
    with pytest.raises(UsageError, match="^shard_bytes must be a positive integer"):
        record(tmp_path / "r.safetensors", shard_bytes=shard_bytes)
    assert files(tmp_path) == []


def test_a_custom_loop_streams_with_stream_to_and_finish(tmp_path):
    model, (tokens, targets) = tiny(), batch()
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    with pita.torch.Recorder(model, stream_to=tmp_path / "r.safetensors", shard_bytes=800) as recorder:
        recorder.params()
        loss = nn.CrossEntropyLoss()(model(tokens), targets)
        recorder.loss(1, loss)
        loss.backward()
        recorder.grads()
        optimizer.step()
        recorder.step(1, optimizer)
    assert recorder.tensors == {} and files(tmp_path) != []  # shards written while it ran, under temporary names
    assert all(name.startswith(".r.safetensors.") for name in files(tmp_path))
    with pytest.raises(UsageError, match="close it with finish"):
        recorder.write(tmp_path / "other.safetensors")
    written = recorder.finish(experiment="custom")
    dump = read_dump(written)
    assert written.name == "r.safetensors.index.json" and dump.metadata["experiment"] == "custom" and "step1/fc1.weight" in dump.tensors
    assert not [name for name in files(tmp_path) if name.startswith(".")]


def test_a_custom_loop_that_raises_leaves_nothing(tmp_path):
    model, (tokens, _) = tiny(), batch()
    with pytest.raises(RuntimeError, match="mid-loop"):
        with pita.torch.Recorder(model, stream_to=tmp_path / "r.safetensors", shard_bytes=800) as recorder:
            recorder.params()
            model(tokens)
            raise RuntimeError("mid-loop")
    assert files(tmp_path) == []


def test_an_earlier_recording_stays_whole_when_the_index_cannot_be_written(tmp_path, monkeypatch):
    record(tmp_path / "r.safetensors", shard_bytes=1000)
    before = {name: (tmp_path / name).read_bytes() for name in files(tmp_path)}

    def failing(path, data):
        raise UsageError(f"{path}: cannot write (No space left on device)")

    monkeypatch.setattr(pita.sharded_writer, "write_atomically", failing)
    with pytest.raises(UsageError, match="No space left on device"):
        record(tmp_path / "r.safetensors", steps=1, shard_bytes=1000)  # its shards took the earlier ones' names before the index failed
    assert {name: (tmp_path / name).read_bytes() for name in files(tmp_path)} == before


def test_a_tensor_written_from_its_own_memory_is_written_before_it_changes(tmp_path):
    model = tiny()
    before = {name: p.detach().clone() for name, p in model.named_parameters()}
    with pita.torch.Recorder(model, stream_to=tmp_path / "r.safetensors", shard_bytes=16) as recorder:
        recorder.params()  # every parameter is 16 bytes or more: each is a shard of its own, not copied
        with torch.no_grad():
            for parameter in model.parameters():
                parameter.add_(1.0)  # what an optimizer step does in place
    dump = read_dump(recorder.finish())
    assert all(np.array_equal(np.asarray(dump.tensors[f"param/{name}"]), value.numpy()) for name, value in before.items())
