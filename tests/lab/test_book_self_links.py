"""No page of the book links to itself by file name: a reader who follows it lands where they
are (reading.md once sent its readers to reading.md#backends). An anchor on the same page is
written `#anchor`."""

import re

from pita_lab import catalog
from pita_lab.book import render_chapter
from pita_lab.store import RecordStore


def self_links(experiment_id: str, page: str) -> list[str]:
    return re.findall(rf"\]\({re.escape(experiment_id)}\.md(?:#[^)]*)?\)", page)


def test_no_chapter_links_to_itself(root):
    found = {}
    store = RecordStore(root)
    for experiment_id in catalog.chapter_ids():
        record = store.committed(experiment_id)
        if record is not None and (links := self_links(experiment_id, render_chapter(root, record))):
            found[experiment_id] = links
    assert found == {}


def test_a_self_link_is_found():
    assert self_links("reading", "见[怎么读这一卷](reading.md#backends)。") == ["](reading.md#backends)"]
    assert self_links("reading", "见本页的[后端一节](#backends)，[p12](p12.md)") == []
