"""The claims p10h declares in its own folder (experiments/p10h-…/experiment.py) must fail when
the behaviour they state changes."""

import json

from pita_lab.catalog import get
from pita_lab.record import ProgramRun, RunRecord

CLAIMS = {claim.id: claim for claim in get("p10h").claims}


def record(*programs):
    return RunRecord("p10h", {}, "", list(programs), [], [], [], [])


def run(side, variant, **metadata):
    return ProgramRun(side, variant, [], 0, "", "", f"{side}-{variant}.safetensors", metadata)


def holds(claim_id, rec):
    return CLAIMS[claim_id].check(rec, None).ok


def test_unused_only_needs_applied_tensors_nothing_missing_and_only_the_prefix_unused():
    def load(applied="layers.0.norm_1.gamma", missing="", unused="norm.bias,norm.weight"):
        return record(run("burn", "stack-port", applied=applied, missing=missing, unused=unused))

    assert holds("final-norm-unused", load())
    assert not holds("final-norm-unused", load(unused=""))  # the final norm found a place
    assert not holds("final-norm-unused", load(unused="norm.weight,layers.0.norm1.weight"))
    assert not holds("final-norm-unused", load(missing="layers.0.norm_2.gamma"))
    assert not holds("final-norm-unused", load(applied=""))


def test_runs_first_reads_the_first_name_of_the_execution_order():
    def recording(*order):
        return record(run("burn", "record-port", execution_order=json.dumps(list(order))))

    assert holds("burn-norm2-first", recording("act/layers.0.norm2", "act/layers.0.self_attn"))
    assert not holds("burn-norm2-first", recording("act/layers.0.norm1", "act/layers.0.norm2"))
    assert not holds("burn-norm2-first", recording())
    assert not holds("burn-norm2-first", record(run("burn", "record-port")))  # not a recording
