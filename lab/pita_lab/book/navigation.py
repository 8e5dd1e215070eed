"""How a reader finds a chapter: the index by symptom (book/symptoms.md), the diagnosis reference
in Chinese (book/diagnosis.md), and the links at the end of every chapter. Everything here is
derived from the experiments' declarations (`symptoms`, `related`), the diagnosis rules' docs and
the committed run records."""

from __future__ import annotations

from pathlib import Path

from pita.diagnose import parse_rule_doc
from pita.trace import TraceResult
from pita_lab import catalog
from pita_lab.book.causes import CAUSES_PAGE, LINT_PART, SIGNATURE_PART, recognised
from pita_lab.book.diagnosis_zh import DIAGNOSIS_ZH
from pita_lab.book.environment import KIND_ZH, MAINLINE_ZH, environment
from pita_lab.listing import catalog_rows
from pita_lab.record import RunRecord
from pita_lab.store import RecordStore
from pita_lab.symptoms import SYMPTOMS

SYMPTOMS_PAGE = "symptoms.md"
DIAGNOSIS_PAGE = "diagnosis.md"
SECTIONS_ZH = ("检测什么", "移植中为什么会出现", "例子", "怎么改")
# Full-width punctuation: a wrapped line joins it without a space.
WIDE_PUNCTUATION = "，。：；（）「」、！？"


def chapter_ids() -> list[str]:
    return catalog.chapter_ids()


def _record(root: Path, experiment_id: str) -> RunRecord | None:
    return RecordStore(root).committed(experiment_id)


def reported_kinds(run) -> set[str]:
    """The diagnosis kinds one recorded `pita compare` reported on its tensors, or one recorded
    `pita trace` at its first divergence."""
    result = run.result
    if isinstance(result, TraceResult):
        return {d.kind for d in result.first_divergence.diagnosis} if result.first_divergence else set()
    return {d.kind for t in run.tensors for d in t.diagnosis}


def diagnosed_kinds(record: RunRecord) -> list[str]:
    """The diagnosis kinds reported in a record's comparisons and traces, in rule order."""
    from pita.diagnose import RULES

    found = set().union(*(reported_kinds(run) for run in record.comparisons + record.traces))
    return [rule.KIND for rule in RULES if rule.KIND in found]


def chapter_links(root: Path, experiment_id: str) -> dict:
    """What a chapter's 「相关」 section links to: related chapters (both ways), its symptoms and
    the diagnosis kinds its comparisons showed."""
    experiment = catalog.get(experiment_id)
    record = _record(root, experiment_id)
    return {
        "related": [catalog.get(i) for i in catalog.related(experiment_id)],
        "symptoms": [s for s in SYMPTOMS if s.key in experiment.symptoms],
        "kinds": diagnosed_kinds(record) if record else [],
        "guides": [catalog.get(i) for i in catalog.guide_ids() if i != experiment_id and _record(root, i)],
        "symptoms_page": SYMPTOMS_PAGE,
        "diagnosis_page": DIAGNOSIS_PAGE,
    }


def symptom_groups(root: Path) -> list[dict]:
    """Each symptom with the chapters that declare it, as rows of the catalog page (magnitude as
    measured), in main-line order, each with whether the tools recognise it (`recognised`)."""
    rows = {row["id"]: row for row in catalog_rows(root)}
    for other_id in catalog.chapter_ids():  # tutorials and guides: no main-line stage, no magnitude
        if other_id not in rows and _record(root, other_id):
            other = catalog.get(other_id)
            rows[other_id] = {"id": other_id, "title": other.title, "mainline": None, "class": other.kind, "magnitude": None}
    groups = []
    for symptom in SYMPTOMS:
        members = [{**rows[i], "recognised": recognised(root, i)} for i in chapter_ids() if i in rows and symptom.key in catalog.get(i).symptoms]
        groups.append({"symptom": symptom, "rows": members})
    return groups


def render_symptoms_page(root: Path) -> dict[Path, str]:
    text = environment().get_template("symptoms.md.j2").render(
        groups=symptom_groups(root), mainline_zh=MAINLINE_ZH, kind_zh=KIND_ZH, causes_page=CAUSES_PAGE,
        anchors={"signature": SIGNATURE_PART, "lint": LINT_PART})
    return {root / "book" / SYMPTOMS_PAGE: text}


def parse_doc_zh(rule) -> tuple[str, dict[str, str]]:
    """A rule's doc in Chinese (`DIAGNOSIS_ZH`, by its kind): the summary after `kind：` and the
    text of each section in SECTIONS_ZH. Raises when the doc or a part of it is missing."""
    doc = DIAGNOSIS_ZH.get(rule.KIND)
    if not doc:
        raise ValueError(f"diagnosis rule {rule.KIND} has no doc in Chinese (pita_lab/book/diagnosis_zh.py, for book/{DIAGNOSIS_PAGE})")
    try:
        summary, sections = parse_rule_doc(doc, SECTIONS_ZH)
    except ValueError as error:
        raise ValueError(f"diagnosis rule {rule.KIND}: its doc in Chinese {error}") from None
    return summary, {title: join_wrapped(lines) for title, lines in sections.items()}


def join_wrapped(lines: list[str]) -> str:
    """Wrapped lines of mixed Chinese and code as one paragraph: no space between two Chinese
    characters or at full-width punctuation, one space elsewhere."""
    text = ""
    for line in lines:
        if text and not _joins_tight(text[-1], line[0]):
            text += " "
        text += line
    return text


def _joins_tight(before: str, after: str) -> bool:
    if before in WIDE_PUNCTUATION or after in WIDE_PUNCTUATION:
        return True
    return _is_cjk(before) and _is_cjk(after)


def _is_cjk(char: str) -> bool:
    return "\u2e80" <= char <= "\u9fff" or "\uff00" <= char <= "\uffef"


def diagnosis_examples(root: Path) -> dict[str, list[dict]]:
    """kind -> the chapters whose committed comparisons (`pita compare`, `pita trace`) reported
    that kind, and the (reference, candidate) runs that showed it."""
    examples = {}
    for experiment_id in chapter_ids():
        record = _record(root, experiment_id)
        if record is None:
            continue
        for run in record.comparisons + record.traces:
            for kind in reported_kinds(run):
                examples.setdefault(kind, {}).setdefault(experiment_id, []).append((run.reference, run.candidate))
    return {kind: [{"experiment": catalog.get(i), "comparisons": c} for i, c in found.items()] for kind, found in examples.items()}


def render_diagnosis_page(root: Path) -> dict[Path, str]:
    from pita.diagnose import RULES
    from pita.diagnose.base import EXPLAINED, SAMPLE

    rules = []
    for rule in RULES:
        summary, sections = parse_doc_zh(rule)
        rules.append({"kind": rule.KIND, "summary": summary, "sections": sections})
    text = environment().get_template("diagnosis.md.j2").render(
        rules=rules, examples=diagnosis_examples(root), sample=SAMPLE, explained=EXPLAINED)
    return {root / "book" / DIAGNOSIS_PAGE: text}
