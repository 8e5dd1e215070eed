"""Finding a chapter: the symptom vocabulary and each experiment's `symptoms` and `related`, the
index by symptom, the Chinese diagnosis reference, and the 「相关」 section of every chapter."""

import dataclasses
import re
import shutil
import types

import pytest

from conftest import ROOT
from pita.diagnose import RULES
from pita_lab import catalog
from pita_lab.book.diagnosis_zh import DIAGNOSIS_ZH
from pita_lab.book.navigation import (
    SECTIONS_ZH,
    diagnosis_examples,
    join_wrapped,
    parse_doc_zh,
    render_diagnosis_page,
    render_symptoms_page,
)
from pita_lab.errors import BrokenExperiment
from pita_lab.symptoms import BY_KEY, SYMPTOMS

CHAPTERS = catalog.ids() + catalog.tutorial_ids()


def test_every_experiment_names_a_known_symptom_and_every_symptom_has_a_chapter():
    used = set()
    for experiment_id in CHAPTERS:
        symptoms = catalog.get(experiment_id).symptoms
        assert symptoms, f"{experiment_id} declares no symptom"
        assert set(symptoms) <= set(BY_KEY), experiment_id
        used |= set(symptoms)
    assert used == set(BY_KEY), f"symptoms no chapter declares: {set(BY_KEY) - used}"
    assert len({s.key for s in SYMPTOMS}) == len(SYMPTOMS) and all(s.title and s.description for s in SYMPTOMS)


def test_an_unknown_symptom_or_related_id_is_refused():
    experiment = catalog.get("p12")
    with pytest.raises(ValueError, match="unknown symptom.*grad-huge"):
        dataclasses.replace(experiment, symptoms=("grad-scaled", "grad-huge"))
    with pytest.raises(BrokenExperiment, match="related 'p99' is not another chapter"):
        catalog.check_related(dataclasses.replace(experiment, related=("p99",)))
    with pytest.raises(BrokenExperiment, match="related 'p12'"):
        catalog.check_related(dataclasses.replace(experiment, related=("p12",)))


def test_a_folder_declaring_an_unknown_symptom_is_refused_with_one_line(tmp_path):
    shutil.copytree(catalog.folders()["p12"], tmp_path / "p99-copied-pitfall")
    declaration = tmp_path / "p99-copied-pitfall" / "experiment.py"
    text = declaration.read_text().replace('id="p12"', 'id="p99"')
    declaration.write_text(re.sub(r"symptoms=\([^)]*\)", 'symptoms=("grad-huge",)', text))
    with pytest.raises(BrokenExperiment, match=r"^experiments/p99-copied-pitfall/experiment.py: p99: unknown symptom\(s\) grad-huge"):
        catalog.load(catalog.folders(tmp_path)["p99"])


def test_a_relation_shows_on_both_ends():
    for experiment_id in CHAPTERS:
        for other in catalog.get(experiment_id).related:
            assert other in catalog.related(experiment_id)
            assert experiment_id in catalog.related(other), f"{other} does not link back to {experiment_id}"


def test_a_relation_declared_on_one_end_is_linked_from_the_other(monkeypatch):
    declared = {i: catalog.get(i) for i in catalog.chapter_ids() if i in CHAPTERS}
    one_sided = dataclasses.replace(declared["p12"], related=())
    monkeypatch.setattr(catalog, "_load", lambda i: one_sided if i == "p12" else declared[i])
    monkeypatch.setattr(catalog, "chapter_ids", lambda: CHAPTERS)
    back = [i for i in CHAPTERS if "p12" in declared[i].related]
    assert back and catalog.related("p12") == back


def related_section(experiment_id: str) -> str:
    text = (ROOT / "book" / f"{experiment_id}.md").read_text(encoding="utf-8")
    assert "\n## 相关\n" in text, f"book/{experiment_id}.md has no 「相关」 section"
    return text.rsplit("\n## 相关\n", 1)[1]


def test_each_committed_chapter_links_its_related_chapters_and_symptoms():
    for experiment_id in CHAPTERS:
        section = related_section(experiment_id)
        for other in catalog.related(experiment_id):
            assert f"]({other}.md)" in section, f"book/{experiment_id}.md does not link {other}"
        for key in catalog.get(experiment_id).symptoms:
            assert f"](symptoms.md#{key})" in section, f"book/{experiment_id}.md does not link symptom {key}"
        assert "](diagnosis.md)" in section


def test_the_symptom_page_lists_each_chapter_under_each_of_its_symptoms():
    (path, text), = render_symptoms_page(ROOT).items()
    assert path == ROOT / "book" / "symptoms.md"
    sections = dict(part.split("\n", 1) for part in text.split('<a id="')[1:])
    assert set(sections) == {f'{s.key}"></a>' for s in SYMPTOMS}
    for experiment_id in CHAPTERS:
        experiment = catalog.get(experiment_id)
        for key in BY_KEY:
            listed = f"]({experiment_id}.md)" in sections[f'{key}"></a>']
            assert listed == (key in experiment.symptoms), (experiment_id, key)


def test_every_rule_has_its_doc_in_chinese_with_every_section():
    for rule in RULES:
        summary, sections = parse_doc_zh(rule)
        assert summary and list(sections) == list(SECTIONS_ZH) and all(sections.values()), rule.KIND


def test_a_rule_without_a_chinese_doc_or_section_is_refused(monkeypatch):
    fake = types.SimpleNamespace(KIND="fake")
    with pytest.raises(ValueError, match="fake has no doc in Chinese"):
        parse_doc_zh(fake)
    monkeypatch.setitem(DIAGNOSIS_ZH, "fake", "fake：摘要。\n\n检测什么\n    一行。\n")
    with pytest.raises(ValueError, match="lacks.*移植中为什么会出现"):
        parse_doc_zh(fake)
    monkeypatch.setitem(DIAGNOSIS_ZH, "fake", "fake\n\n" + "\n".join(f"{title}\n    一行。" for title in SECTIONS_ZH))
    with pytest.raises(ValueError, match="lacks its summary"):
        parse_doc_zh(fake)


def test_wrapped_chinese_joins_without_spaces_and_code_with_one():
    assert join_wrapped(["误差", "远小于", "`k`", "之后，", "`x`"]) == "误差远小于 `k` 之后，`x`"


def test_the_diagnosis_page_has_every_rule_and_links_chapters_that_show_it():
    (path, text), = render_diagnosis_page(ROOT).items()
    assert path == ROOT / "book" / "diagnosis.md"
    examples = diagnosis_examples(ROOT)
    assert examples, "no committed record shows any diagnosis"
    for rule in RULES:
        body = text.split(f'<a id="{rule.KIND}"></a>', 1)[1].split('<a id="', 1)[0]
        assert parse_doc_zh(rule)[1]["怎么改"] in body
        for example in examples.get(rule.KIND, []):
            assert f"]({example['experiment'].id}.md)" in body, (rule.KIND, example["experiment"].id)


def test_a_users_report_is_cited_as_owner_repo_number_and_rendered_as_a_link():
    experiment = catalog.get("p12")
    for malformed in ("burn#4043", "tracel-ai/burn#", "tracel-ai/burn 4043", "https://github.com/tracel-ai/burn/issues/4043"):
        with pytest.raises(ValueError, match="owner/repo#number"):
            dataclasses.replace(experiment, reports=(malformed,))
    cited = [i for i in catalog.ids() if catalog.get(i).reports]
    assert cited, "no experiment cites a user's report"
    for experiment_id in cited:
        chapter = (ROOT / "book" / f"{experiment_id}.md").read_text(encoding="utf-8")
        for report in catalog.get(experiment_id).reports:
            repository, number = report.split("#")
            assert f"[{report}](https://github.com/{repository}/issues/{number})" in chapter, (experiment_id, report)
