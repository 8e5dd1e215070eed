"""Every rule's docstring in the fixed layout, read by the one parser of rule docs."""

import pytest

from pita.diagnose import RULES, SECTIONS, parse_rule_doc, reference_page


@pytest.mark.parametrize("rule", RULES, ids=lambda rule: rule.KIND)
def test_every_rule_has_a_docstring_with_its_kind_summary_and_every_section(rule):
    assert rule.__doc__.startswith(f"{rule.KIND}: ")
    summary, sections = parse_rule_doc(rule.__doc__, SECTIONS)
    assert summary and list(sections) == list(SECTIONS) and all(sections.values())
    assert f"## `{rule.KIND}`\n\n{summary[:1].upper()}{summary[1:]}\n" in reference_page()


def test_the_parser_reads_a_full_width_colon_and_indented_sections():
    summary, sections = parse_rule_doc("k：摘要。\n\n例子\n    一行，\n    两行。\n", ("例子",))
    assert (summary, sections) == ("摘要。", {"例子": ["一行，", "两行。"]})


@pytest.mark.parametrize("doc, lacks", [
    ("sign: flipped.\n\nWhat it detects\n    x.\n", "lacks Why it happens in a port, Example, Remedy: 'sign: flipped.'"),
    ("sign flipped\n\n" + "\n".join(f"{title}\n    x." for title in SECTIONS), "lacks its summary"),
    (None, "lacks its summary after 'kind:', What it detects, "),
])
def test_the_parser_names_what_a_doc_lacks(doc, lacks):
    with pytest.raises(ValueError, match=lacks):
        parse_rule_doc(doc, SECTIONS)
