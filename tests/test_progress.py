"""pita.progress: one line on stderr, only on a terminal (or forced), throttled, cleared at the end."""

from __future__ import annotations

import io

import pytest

from pita.errors import UsageError
from pita.progress import MAX_COLUMNS, Progress, line, shorten


class _Terminal(io.StringIO):
    def isatty(self):
        return True


class _Clock:
    def __init__(self):
        self.now = 0.0

    def __call__(self):
        return self.now


def _frames(written: str) -> list[str]:
    """What each redraw showed: the text between carriage returns, trailing padding dropped."""
    return [frame.rstrip() for frame in written.split("\r") if frame.strip()]


def test_silent_when_not_a_terminal(monkeypatch):
    monkeypatch.delenv("PITA_PROGRESS", raising=False)
    stream = io.StringIO()
    with Progress(3, "trace", stream=stream) as progress:
        for name in ("a", "b", "c"):
            progress.advance(name)
    assert stream.getvalue() == ""
    assert progress.done == 3


def test_drawn_on_a_terminal_and_cleared(monkeypatch):
    monkeypatch.delenv("PITA_PROGRESS", raising=False)
    stream = _Terminal()
    clock = _Clock()
    with Progress(525, "trace", stream=stream, clock=clock) as progress:
        progress.advance("act/encoder.layer.3")
        assert _frames(stream.getvalue()) == ["[1/525] trace act/encoder.layer.3…"]
    written = stream.getvalue()
    # Cleared: the last thing written blanks the line and returns to its start.
    assert written.endswith("\r" + " " * len("[1/525] trace act/encoder.layer.3…") + "\r")
    assert "\n" not in written


def test_zero_silences_even_a_terminal(monkeypatch):
    monkeypatch.setenv("PITA_PROGRESS", "0")
    stream = _Terminal()
    with Progress(2, "trace", stream=stream) as progress:
        progress.advance("a")
    assert stream.getvalue() == ""


def test_one_forces_it_off_a_terminal(monkeypatch):
    monkeypatch.setenv("PITA_PROGRESS", "1")
    stream = io.StringIO()
    with Progress(2, "record", stream=stream) as progress:
        progress.advance("param/w")
    assert _frames(stream.getvalue()) == ["[1/2] record param/w…"]


def test_forced_to_the_real_stderr(monkeypatch, capfd):
    monkeypatch.setenv("PITA_PROGRESS", "1")
    with Progress(1, "trace") as progress:
        progress.advance("loss/1")
    captured = capfd.readouterr()
    assert captured.out == ""
    assert "[1/1] trace loss/1…" in captured.err


def test_other_values_are_a_usage_error(monkeypatch):
    monkeypatch.setenv("PITA_PROGRESS", "yes")
    with pytest.raises(UsageError, match="PITA_PROGRESS"):
        Progress(1, "trace", stream=io.StringIO())


def test_throttled_to_ten_redraws_a_second(monkeypatch):
    monkeypatch.setenv("PITA_PROGRESS", "1")
    stream = io.StringIO()
    clock = _Clock()
    with Progress(1000, "trace", stream=stream, clock=clock) as progress:
        for index in range(1000):
            clock.now = index * 0.001  # 1000 items in one second
            progress.advance(f"t{index}")
    frames = _frames(stream.getvalue())
    assert 9 <= len(frames) <= 10
    assert frames[0] == "[1/1000] trace t0…"
    assert frames[1] == "[101/1000] trace t100…"


def test_a_shorter_line_covers_the_longer_one(monkeypatch):
    monkeypatch.setenv("PITA_PROGRESS", "1")
    stream = io.StringIO()
    clock = _Clock()
    with Progress(2, "", stream=stream, clock=clock) as progress:
        progress.advance("a-long-name")
        clock.now = 1.0
        progress.advance("b")
        second = stream.getvalue().split("\r")[2]
    assert second == "[2/2] b…".ljust(len("[1/2] a-long-name…"))


def test_names_shortened_to_fit_100_columns():
    name = "act/" + ".".join(f"encoder.layer.{i}" for i in range(20)) + ".output"
    text = line(312, 525, "trace", name)
    assert len(text) == MAX_COLUMNS
    assert text.startswith("[312/525] trace act/encoder.layer.0")
    assert text.endswith("layer.19.output…")
    assert text.count("…") == 2
    assert line(1, 2, "trace", "act/short") == "[1/2] trace act/short…"


def test_names_are_printed_safely():
    assert line(1, 1, "trace", "act/x\n[2/2] forged") == "[1/1] trace act/x\\n[2/2] forged…"


def test_shorten_keeps_both_ends():
    assert shorten("abcdefghij", 10) == "abcdefghij"
    assert shorten("abcdefghij", 5) == "ab…ij"
    assert shorten("abcdefghij", 1) == "…"
    assert shorten("abcdefghij", 0) == ""


def test_narrow_terminal(monkeypatch):
    monkeypatch.setenv("PITA_PROGRESS", "1")
    monkeypatch.setenv("COLUMNS", "41")
    stream = io.StringIO()
    with Progress(10, "trace", stream=stream) as progress:
        progress.advance("act/" + "x" * 200)
    assert len(_frames(stream.getvalue())[0]) == 40
