"""pita.recording against tests/data/recording-convention.json, the convention as data that the
Rust recorder's tests read too: the builders, the parser, the phases and the reserved keys."""

import json
from dataclasses import asdict
from pathlib import Path

import pytest

from pita import recording
from pita.errors import UsageError

CONVENTION = json.loads((Path(__file__).parent / "data" / "recording-convention.json").read_text())
BUILT = [example for example in CONVENTION["names"] if "build" in example]


def test_the_constants_are_the_conventions():
    assert recording.RECORDING == CONVENTION["recording"]
    assert list(recording.PHASES) == CONVENTION["phases"] and recording.OTHER == CONVENTION["other"]
    assert recording.MAX_NUMBER == CONVENTION["max_number"]
    assert list(recording.RECORDER_KEYS) == CONVENTION["metadata"]["recorder"]
    assert list(recording.PROVENANCE_KEYS) == CONVENTION["metadata"]["provenance"]


@pytest.mark.parametrize("example", BUILT, ids=lambda example: example["name"])
def test_each_builder_builds_the_name(example):
    builder, *args = example["build"]
    assert getattr(recording, builder)(*args) == example["name"]


@pytest.mark.parametrize("example", CONVENTION["names"], ids=lambda example: example["name"])
def test_each_name_parses_to_what_it_says(example):
    assert asdict(recording.parse(example["name"])) == example["parse"]


@pytest.mark.parametrize("name", CONVENTION["outside"])
def test_a_name_outside_the_convention_parses_to_nothing(name):
    assert recording.parse(name) is None


@pytest.mark.parametrize("call", CONVENTION["refused"], ids=str)
def test_a_number_the_convention_cannot_hold_is_refused(call):
    builder, *args = call
    with pytest.raises(UsageError, match="numbered"):
        getattr(recording, builder)(*args)


def test_looks_recorded_tells_the_prefixes_well_formed_or_not():
    assert all(recording.looks_recorded(name) for name in CONVENTION["looks_recorded"]["yes"])
    assert not any(recording.looks_recorded(name) for name in CONVENTION["looks_recorded"]["no"])


def test_every_reserved_key_is_refused_and_user_keys_pass():
    metadata = CONVENTION["metadata"]
    for key in metadata["recorder"]:
        with pytest.raises(UsageError, match=f"metadata '{key}': set by the recorder itself"):
            recording.check_metadata([key, *metadata["user"]])
        recording.check_metadata([key], recording=False)  # a plain dump may hold it
    for key in metadata["provenance"]:
        for is_recording in (True, False):
            with pytest.raises(UsageError, match=f"metadata '{key}': set by the dump writer itself"):
                recording.check_metadata([key, *metadata["user"]], recording=is_recording)
    recording.check_metadata(metadata["user"])


def test_the_message_lists_every_reserved_key_sorted():
    with pytest.raises(UsageError, match=r"^metadata 'dtype', 'steps': set by the recorder itself$"):
        recording.check_metadata(["steps", "batch_size", "dtype"])
