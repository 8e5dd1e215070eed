"""Sharded safetensors checkpoints (Hugging Face's `*.safetensors.index.json`), written with the
reference `safetensors` package and read through their index (docs/dump-format.md)."""

import json
import os

import numpy as np
import pytest
from safetensors.numpy import save_file

from conftest import pita
from pita.dump import LAZY_MIN_BYTES, Dump, read_dump, write_dump
from pita.errors import UsageError
from pita.filetensor import FileTensor

RNG = np.random.default_rng(3)
TENSORS = {
    "embed.weight": RNG.standard_normal((16, 8)).astype(np.float32),
    "layer.0.fc.weight": RNG.standard_normal((8, 8)).astype(np.float32),
    "layer.0.fc.bias": RNG.standard_normal(8).astype(np.float32),
    "layer.1.fc.weight": RNG.standard_normal((8, 8)).astype(np.float32),
    "layer.1.fc.bias": RNG.standard_normal(8).astype(np.float32),
    "head.weight": RNG.standard_normal((LAZY_MIN_BYTES // 4 + 8,)).astype(np.float32),  # stays in its shard
    "steps": np.array([3], np.int64),
}
SHARDS = {
    "model-00001-of-00003.safetensors": ["embed.weight", "layer.0.fc.weight", "layer.0.fc.bias"],
    "model-00002-of-00003.safetensors": ["layer.1.fc.weight", "layer.1.fc.bias", "steps"],
    "model-00003-of-00003.safetensors": ["head.weight"],
}


def sharded(folder, shards=SHARDS, tensors=TENSORS, weight_map=None, metadata=None, shard_metadata=None, name="model"):
    folder.mkdir(parents=True, exist_ok=True)
    for shard, names in shards.items():
        save_file({n: tensors[n] for n in names}, str(folder / shard), metadata=shard_metadata or {"format": "pt"})
    if weight_map is None:
        weight_map = {n: shard for shard, names in shards.items() for n in names}
    index = {"metadata": metadata or {"total_size": sum(t.nbytes for t in tensors.values())}, "weight_map": weight_map}
    path = folder / f"{name}.safetensors.index.json"
    path.write_text(json.dumps(index))
    return path


def test_a_three_shard_checkpoint_compares_ok_against_the_unsharded_one(tmp_path):
    index = sharded(tmp_path / "sharded")
    save_file(TENSORS, str(tmp_path / "whole.safetensors"), metadata={"format": "pt"})
    proc = pita("compare", tmp_path / "whole.safetensors", index)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.splitlines()[-1] == "worst=0.00e+00 tol=F32:1e-06; I64:exact OK"  # TENSORS hold an I64 one
    changed = dict(TENSORS, **{"layer.1.fc.bias": TENSORS["layer.1.fc.bias"] * 2})
    other = sharded(tmp_path / "changed", tensors=changed)
    proc = pita("compare", index, other)
    assert proc.returncode == 1 and "layer.1.fc.bias" in proc.stdout and "candidate = 2 × reference" in proc.stdout


def test_the_dump_holds_every_shard_with_the_index_and_shared_metadata(tmp_path):
    index = sharded(tmp_path, shard_metadata={"format": "pt", "framework": "torch"})
    dump = read_dump(index)
    assert list(dump.tensors) == [n for names in SHARDS.values() for n in names]  # the index's order
    for name, value in TENSORS.items():
        np.testing.assert_array_equal(np.asarray(dump.tensors[name]), value)
    assert isinstance(dump.tensors["head.weight"], FileTensor)
    assert dump.tensors["head.weight"].path.endswith("model-00003-of-00003.safetensors")
    assert dump.metadata == {"format": "pt", "framework": "torch", "total_size": str(sum(t.nbytes for t in TENSORS.values()))}
    assert dump.source == str(index) and dump.notes == []


def test_shards_keep_only_the_metadata_they_share_and_the_index_wins(tmp_path):
    index = sharded(tmp_path, metadata={"format": "sharded", "ok": True, "ratio": 0.5})
    save_file({"head.weight": TENSORS["head.weight"]}, str(tmp_path / "model-00003-of-00003.safetensors"),
              metadata={"format": "pt", "only": "here"})
    dump = read_dump(index)
    assert dump.metadata == {"format": "sharded", "ok": "true", "ratio": "0.5"}
    assert dump.notes == ["metadata 'format': the index says 'sharded', every shard 'pt'; the index's is kept"]


def test_the_suffix_is_matched_in_any_case_and_goes_to_the_sharded_reader(tmp_path):
    index = sharded(tmp_path)
    upper = index.rename(tmp_path / "MODEL.SAFETENSORS.INDEX.JSON")
    assert len(read_dump(upper).tensors) == len(TENSORS)
    (tmp_path / "plain.json").write_text(upper.read_text())
    with pytest.raises(UsageError, match="not a pita JSON dump"):
        read_dump(tmp_path / "plain.json")


@pytest.mark.parametrize("weight_map, says", [
    ({"embed.weight": "../model-00001-of-00003.safetensors"}, "not a plain file name"),
    ({"embed.weight": "/etc/model.safetensors"}, "not a plain file name"),
    ({"embed.weight": "sub\\model.safetensors"}, "not a plain file name"),
    ({"embed.weight": ".."}, "not a plain file name"),
    ({"embed.weight": "model-00001-of-00003.bin"}, "not a .safetensors file"),
    ({"embed.weight": 3}, "must be a file name"),
    ({"embed\nOK": "model-00001-of-00003.safetensors"}, "printed on one line"),
    ({}, "lists no tensors"),
])
def test_a_bad_weight_map_is_refused(tmp_path, weight_map, says):
    index = sharded(tmp_path, weight_map=weight_map)
    with pytest.raises(UsageError, match=says):
        read_dump(index)


def test_shards_must_hold_exactly_what_the_index_says(tmp_path):
    full = {n: shard for shard, names in SHARDS.items() for n in names}
    index = sharded(tmp_path / "a", weight_map={k: v for k, v in full.items() if k != "steps"})
    with pytest.raises(UsageError, match="holds tensor 'steps': the index does not list it"):
        read_dump(index)
    index = sharded(tmp_path / "b", weight_map={**full, "extra": "model-00003-of-00003.safetensors"})
    with pytest.raises(UsageError, match="tensor 'extra' is not in shard model-00003-of-00003.safetensors"):
        read_dump(index)
    twice = {**SHARDS, "model-00003-of-00003.safetensors": ["head.weight", "steps"]}
    index = sharded(tmp_path / "c", shards=twice, weight_map=full)
    with pytest.raises(UsageError, match="holds tensor 'steps': the index puts it in model-00002-of-00003.safetensors"):
        read_dump(index)


def test_every_shard_is_checked_before_any_is_read(tmp_path, monkeypatch):
    import pita.dump

    index = sharded(tmp_path)
    os.unlink(tmp_path / "model-00003-of-00003.safetensors")
    os.mkfifo(tmp_path / "model-00003-of-00003.safetensors")
    read = []
    monkeypatch.setattr(pita.dump, "read_safetensors", lambda path, real=pita.dump.read_safetensors: read.append(path) or real(path))
    with pytest.raises(UsageError, match="model-00003-of-00003.safetensors: a FIFO"):
        read_dump(index)
    assert [p.name for p in read] == ["model-00003-of-00003.safetensors"]  # only to say what it is
    os.unlink(tmp_path / "model-00003-of-00003.safetensors")
    with pytest.raises(UsageError, match="model-00003-of-00003.safetensors: No such file"):
        read_dump(index)


def test_an_index_is_read_strictly_and_bounded(tmp_path, monkeypatch):
    import pita.dump

    path = tmp_path / "m.safetensors.index.json"
    for text, says in (('{"weight_map": {"a": "x.safetensors", "a": "y.safetensors"}}', "appears twice"),
                       ('{"weight_map": {"a": NaN}}', "bare NaN"), ("[1]", "not a sharded checkpoint's index"),
                       ('{"weight_map": {}, "metadata": {"a": [1]}}', "metadata: must be an object of strings"),
                       ("[" * 100_000, "not valid JSON")):
        path.write_text(text)
        with pytest.raises(UsageError, match=says):
            read_dump(path)
    monkeypatch.setattr(pita.dump, "MAX_INDEX_BYTES", 100)
    path.write_text(json.dumps({"weight_map": {f"t{i}": "x.safetensors" for i in range(20)}}))
    with pytest.raises(UsageError, match="more than the 100 pita reads in a sharded checkpoint's index"):
        read_dump(path)
    monkeypatch.setattr(pita.dump, "MAX_INDEX_BYTES", 1 << 20)
    monkeypatch.setattr(pita.dump, "MAX_SHARDS", 3)
    path.write_text(json.dumps({"weight_map": {f"t{i}": f"s{i}.safetensors" for i in range(4)}}))
    with pytest.raises(UsageError, match="4 shards, more than the 3"):
        read_dump(path)


def test_unknown_index_keys_are_noted(tmp_path):
    index = sharded(tmp_path)
    document = json.loads(index.read_text())
    index.write_text(json.dumps({**document, "format": "hf"}))
    assert read_dump(index).notes == ["ignored the index's key(s) 'format'"]


def test_a_folder_reads_a_checkpoint_through_its_index(tmp_path):
    sharded(tmp_path)
    write_dump(Dump({"w": np.float32([1.0])}), tmp_path / "other.npz")
    dump = read_dump(tmp_path)
    assert sorted(dump.tensors) == sorted([f"model/{n}" for n in TENSORS] + ["other/w"])
    assert dump.notes == ["skipped shards (read through their index model.safetensors.index.json): "
                          "model-00001-of-00003.safetensors, model-00002-of-00003.safetensors, model-00003-of-00003.safetensors"]


def test_sharded_checkpoints_are_not_written(tmp_path):
    with pytest.raises(UsageError, match="does not write them"):
        write_dump(Dump({"w": np.float32([1.0])}), tmp_path / "m.safetensors.index.json")


def test_trace_reads_a_sharded_recording(tmp_path):
    tensors = {"param/fc.weight": np.eye(2, dtype=np.float32), "act/fc": np.ones((1, 2), np.float32),
               "loss/1": np.float32([1.0])}
    meta = {"recording": "pita-record/1", "execution_order": '["act/fc"]'}
    save_file({"param/fc.weight": tensors["param/fc.weight"]}, str(tmp_path / "r-1.safetensors"), metadata=meta)
    save_file({k: tensors[k] for k in ("act/fc", "loss/1")}, str(tmp_path / "r-2.safetensors"), metadata=meta)
    (tmp_path / "r.safetensors.index.json").write_text(json.dumps(
        {"weight_map": {"param/fc.weight": "r-1.safetensors", "act/fc": "r-2.safetensors", "loss/1": "r-2.safetensors"}}))
    write_dump(Dump(tensors, meta), tmp_path / "whole.safetensors")
    proc = pita("trace", tmp_path / "whole.safetensors", tmp_path / "r.safetensors.index.json")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    lines = proc.stdout.splitlines()
    assert lines[0] == "first divergence: none (every phase recorded matched)"  # no backward, no step
    assert {"parameters: 1 compared, 0 mismatched; load audit: clean", "forward: 1 compared, 0 mismatched",
            "loss: 1 compared, 0 mismatched"} <= set(lines)  # every shard's tensors walked in their phases
    save_file({"act/fc": tensors["act/fc"] * 2, "loss/1": tensors["loss/1"]}, str(tmp_path / "r-2.safetensors"), metadata=meta)
    proc = pita("trace", tmp_path / "whole.safetensors", tmp_path / "r.safetensors.index.json")
    assert proc.returncode == 1 and proc.stdout.startswith("first divergence: forward act/fc (introduced)"), proc.stdout


# --- written by pita.sharded_writer, read by the path the recorder was asked to write ---------------


def streamed(path, shard_bytes, tensors=TENSORS, metadata=None, **options):
    from pita.sharded_writer import ShardedWriter

    writer = ShardedWriter(path, shard_bytes=shard_bytes, shard_metadata={"recording": "pita-record/1"}, **options)
    for name, array in tensors.items():
        writer.add(name, array)
    return writer.close(metadata or {"recording": "pita-record/1", "steps": "2"})


def same(dump, tensors):
    return set(dump.tensors) == set(tensors) and all(np.array_equal(np.asarray(dump.tensors[n]), t) for n, t in tensors.items())


def test_a_sharded_recording_is_read_by_the_path_it_was_asked_to_write(tmp_path):
    written = streamed(tmp_path / "r.safetensors", shard_bytes=600)
    assert written == tmp_path / "r.safetensors.index.json" and not (tmp_path / "r.safetensors").exists()
    dump = read_dump(tmp_path / "r.safetensors")
    assert dump.source.endswith("r.safetensors.index.json") and dump.metadata["steps"] == "2" and same(dump, TENSORS)
    assert not same(dump, dict(TENSORS, steps=np.array([4], np.int64)))  # the negative control
    proc = pita("compare", tmp_path / "r.safetensors", tmp_path / "r.safetensors.index.json")
    assert proc.returncode == 0, proc.stdout + proc.stderr


def test_the_fallback_is_only_for_a_missing_safetensors_path(tmp_path):
    streamed(tmp_path / "r.safetensors", shard_bytes=600)
    save_file({"w": np.float32([1.0])}, str(tmp_path / "r.safetensors"))  # an existing file wins over the index beside it
    assert set(read_dump(tmp_path / "r.safetensors").tensors) == {"w"}
    with pytest.raises(UsageError, match="q.safetensors"):
        read_dump(tmp_path / "q.safetensors")  # neither the file nor an index


def test_a_recording_within_one_shard_is_the_one_file_write_dump_writes(tmp_path):
    tensors = dict(TENSORS, norm=np.float32(2.5).reshape(()), mask=np.array([[True, False]]), empty=np.zeros((0, 3), np.float32))
    metadata = {"recording": "pita-record/1", "steps": "2"}
    written = streamed(tmp_path / "r.safetensors", shard_bytes=1 << 30, tensors=tensors, metadata=metadata)
    write_dump(Dump(tensors, metadata), tmp_path / "w.safetensors")
    assert written == tmp_path / "r.safetensors" and sorted(os.listdir(tmp_path)) == ["r.safetensors", "w.safetensors"]
    assert written.read_bytes() == (tmp_path / "w.safetensors").read_bytes()
    assert np.asarray(read_dump(written).tensors["norm"]).shape == ()


def test_sharded_true_writes_the_index_form_for_one_shard(tmp_path):
    written = streamed(tmp_path / "r.safetensors", shard_bytes=1 << 30, sharded=True)
    assert written.name == "r.safetensors.index.json" and sorted(os.listdir(tmp_path)) == ["r-00001.safetensors", written.name]
    assert same(read_dump(tmp_path / "r.safetensors"), TENSORS)
