"""The visual report: ULP histograms and error maps (pita.distribution), their SVG pictures and
the self-contained HTML page (pita.report_html), and `pita compare --html/--histogram`."""

import json
import re
import xml.etree.ElementTree as ElementTree
from html.parser import HTMLParser

import numpy as np
import pytest

from pita.cli import main
from pita.compare import compare_dumps
from pita.distribution import MAX_CELLS, as_2d, measure_distribution, ulp_bins
from pita.dump import Dump, read_dump, write_dump
from pita.filetensor import FileTensor
from pita.report_html import MAX_SHOWN, render_html, shown_tensors, svg_heatmap, svg_histogram
from pita.stats import ULP_UNBOUNDED, ulp_distance

SVG_NAMESPACE = "http://www.w3.org/2000/svg"
PLANTED_ROWS, PLANTED_COLUMNS = slice(120, 130), slice(30, 40)


def nudged(values: np.ndarray, seed: int = 0) -> np.ndarray:
    """`values` moved by -3..3 ULPs each: the rounding noise of a port."""
    steps = np.random.default_rng(seed).integers(-3, 4, values.shape)
    return (values + steps * np.spacing(values)).astype(values.dtype)


def planted_pair() -> tuple[np.ndarray, np.ndarray]:
    """A 200×300 float32 pair that differs by rounding everywhere and by far more in one block."""
    reference = np.random.default_rng(1).standard_normal((200, 300)).astype(np.float32)
    candidate = nudged(reference)
    candidate[PLANTED_ROWS, PLANTED_COLUMNS] += np.float32(0.5)
    return reference, candidate


def expected_histogram(reference: np.ndarray, candidate: np.ndarray) -> tuple[list[int], int]:
    """The oracle: ULP distances from pita.stats.ulp_distance, binned by Python's int.bit_length."""
    distances = [int(d) for d in ulp_distance(reference.reshape(-1), candidate.reshape(-1))]
    finite = [d for d in distances if d < ULP_UNBOUNDED]
    bins = max((d.bit_length() for d in finite), default=0) + 1
    counts = [0] * bins
    for d in finite:
        counts[d.bit_length()] += 1
    return counts, len(distances) - len(finite)


def dumps_of(reference: dict, candidate: dict) -> tuple[Dump, Dump]:
    return Dump(tensors=reference, metadata={}, source="reference"), Dump(tensors=candidate, metadata={}, source="candidate")


# --- what is measured ------------------------------------------------------------------------------


def test_ulp_bins_are_exact_bit_lengths_up_to_63_bits():
    values = [0, 1, 2, 3, 4, 7, 8, 2**31 - 1, 2**31, 2**32 - 1, 2**32, 2**32 + 1, 2**53 - 1, 2**53, 2**53 + 1,
              2**60 - 1, 2**60, ULP_UNBOUNDED - 1]
    assert ulp_bins(np.array(values, dtype=np.int64)).tolist() == [v.bit_length() for v in values]


@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.float16])
def test_histogram_counts_equal_an_independent_count_of_ulp_distances(dtype):
    reference = np.random.default_rng(2).standard_normal(5000).astype(dtype)
    candidate = nudged(reference)
    candidate[::97] *= 1.001
    candidate[10], candidate[20], reference[30], candidate[30] = np.nan, np.inf, np.inf, np.inf
    histogram, error_map = measure_distribution(reference, candidate, error_map=False)
    counts, unbounded = expected_histogram(reference, candidate)
    assert histogram["counts"] == counts
    assert histogram["unbounded"] == unbounded == 2  # NaN and inf against numbers; inf against inf is 0 apart
    assert histogram["edges"] == [0] + [2**k for k in range(len(counts) - 1)]
    assert sum(histogram["counts"]) + histogram["unbounded"] == reference.size
    assert error_map is None


def test_the_error_map_marks_the_planted_block():
    reference, candidate = planted_pair()
    _, error_map = measure_distribution(reference, candidate, error_map=True)
    grid = np.array(error_map["grid"])
    assert error_map["cells"] == [MAX_CELLS, MAX_CELLS] and grid.shape == (MAX_CELLS, MAX_CELLS)
    row, column = np.unravel_index(np.argmax(grid), grid.shape)
    # the hottest cell's block of rows and columns overlaps the planted block
    assert any(r * MAX_CELLS // 200 == row for r in range(200)[PLANTED_ROWS])
    assert any(c * MAX_CELLS // 300 == column for c in range(300)[PLANTED_COLUMNS])
    # every cell is the largest |diff| of its block, computed independently
    diff = np.abs(candidate.astype(np.float64) - reference.astype(np.float64))
    rows = np.arange(200) * MAX_CELLS // 200
    columns = np.arange(300) * MAX_CELLS // 300
    for i, j in [(row, column), (0, 0), (MAX_CELLS - 1, MAX_CELLS - 1)]:
        assert grid[i, j] == diff[np.ix_(rows == i, columns == j)].max()


def test_the_svg_heatmap_outlines_the_cell_over_the_planted_block():
    reference, candidate = planted_pair()
    _, error_map = measure_distribution(reference, candidate, error_map=True)
    svg = ElementTree.fromstring(svg_heatmap(error_map, title="planted"))
    hottest = [rect for rect in svg.iter(f"{{{SVG_NAMESPACE}}}rect") if rect.get("class") == "hottest"]
    assert len(hottest) == 1
    row, column = int(hottest[0].get("data-row")), int(hottest[0].get("data-column"))
    title = hottest[0].find(f"{{{SVG_NAMESPACE}}}title").text
    first_row, last_row = map(int, re.search(r"row (\d+)–(\d+)", title).groups())
    first_column, last_column = map(int, re.search(r"column (\d+)–(\d+)", title).groups())
    assert first_row <= PLANTED_ROWS.start <= last_row or PLANTED_ROWS.start <= first_row < PLANTED_ROWS.stop
    assert first_column <= PLANTED_COLUMNS.start <= last_column or PLANTED_COLUMNS.start <= first_column < PLANTED_COLUMNS.stop
    assert float(hottest[0].get("data-value")) == pytest.approx(np.max(error_map["grid"]), rel=1e-2)
    assert (row, column) == np.unravel_index(np.argmax(error_map["grid"]), (MAX_CELLS, MAX_CELLS))


def test_the_svg_histogram_draws_one_bar_per_bin_with_its_count():
    histogram = {"edges": [0, 1, 2, 4], "counts": [5, 0, 7, 1], "unbounded": 2}
    svg = ElementTree.fromstring(svg_histogram(histogram))
    bars = [rect for rect in svg.iter(f"{{{SVG_NAMESPACE}}}rect") if rect.get("data-bin") is not None]
    assert [int(bar.get("data-count")) for bar in bars] == [5, 0, 7, 1, 2]
    heights = [float(bar.get("height")) for bar in bars]
    assert heights[1] == 0 and heights[2] > heights[0] > heights[4] > heights[3] > 0


@pytest.mark.parametrize(("shape", "view"), [((), (1, 1)), ((7,), (1, 7)), ((3, 5), (3, 5)), ((2, 3, 4), (6, 4)), ((0, 4), (1, 4))])
def test_a_tensor_is_mapped_as_two_dimensions(shape, view):
    assert as_2d(shape) == view


def test_a_strip_and_a_reshaped_tensor_locate_their_error():
    reference = np.zeros((4, 5, 6), dtype=np.float32)
    candidate = reference.copy()
    candidate[2, 3, 1] = 1.0
    _, error_map = measure_distribution(reference, candidate, error_map=True)
    assert error_map["view"] == [20, 6] and error_map["shape"] == [4, 5, 6]
    assert np.argwhere(np.array(error_map["grid"]) > 0).tolist() == [[2 * 5 + 3, 1]]
    strip = np.zeros(1000, dtype=np.float32)
    moved = strip.copy()
    moved[640] = 1.0
    _, error_map = measure_distribution(strip, moved, error_map=True)
    assert error_map["cells"] == [1, MAX_CELLS]
    assert np.argwhere(np.array(error_map["grid"]) > 0).tolist() == [[0, 640 * MAX_CELLS // 1000]]


def test_integers_have_an_error_map_but_no_ulp_histogram():
    reference = np.arange(12, dtype=np.int64).reshape(3, 4)
    candidate = reference.copy()
    candidate[1, 2] = -5
    histogram, error_map = measure_distribution(reference, candidate, error_map=True)
    assert histogram is None
    assert np.array(error_map["grid"]).tolist()[1][2] == 11.0


# --- compare and the page ---------------------------------------------------------------------------


def compared(distributions: bool = True):
    reference, candidate = planted_pair()
    same = np.linspace(-1, 1, 50, dtype=np.float32)
    labels = np.arange(6, dtype=np.int64)
    return compare_dumps(*dumps_of({"w": reference, "b": same, "labels": labels},
                                   {"w": candidate, "b": nudged(same, 3), "labels": labels}), distributions=distributions)


def test_compare_keeps_histograms_and_maps_only_when_asked():
    plain = compared(distributions=False).to_dict()
    assert all("ulp_histogram" not in t and "error_map" not in t for t in plain["tensors"])
    tensors = {t["name"]: t for t in compared().to_dict()["tensors"]}
    assert "ulp_histogram" not in tensors["labels"]  # integers: no ULP distance
    assert "error_map" not in tensors["b"] and "ulp_histogram" in tensors["b"]  # passing: no map
    assert tensors["w"]["error_map"]["cells"] == [MAX_CELLS, MAX_CELLS]
    assert tensors["w"]["ulp_histogram"]["counts"] == expected_histogram(*planted_pair())[0]


class _Structure(HTMLParser):
    """Checks that every element is closed in order, and collects what could reach outside."""

    VOID = {"meta", "br", "link", "img", "input", "hr", "stop"}

    def __init__(self):
        super().__init__()
        self.open, self.errors, self.references, self.tags = [], [], [], set()

    def handle_starttag(self, tag, attrs):
        self.tags.add(tag)
        self.references += [value for name, value in attrs if name in ("href", "src", "xlink:href") and value]
        if tag not in self.VOID:
            self.open.append(tag)

    def handle_startendtag(self, tag, attrs):
        self.tags.add(tag)
        self.references += [value for name, value in attrs if name in ("href", "src", "xlink:href") and value]

    def handle_endtag(self, tag):
        if tag in self.VOID:
            return
        if not self.open or self.open.pop() != tag:
            self.errors.append(tag)


def test_the_page_is_well_formed_self_contained_and_holds_every_row():
    result = compared()
    page = render_html(result)
    structure = _Structure()
    structure.feed(page)
    structure.close()
    assert page.startswith("<!DOCTYPE html>")
    assert not structure.errors and not structure.open
    assert not {"script", "link", "img", "iframe"} & structure.tags
    assert all(reference.startswith("#") for reference in structure.references)
    assert "http" not in page.replace(SVG_NAMESPACE, "") and "url(" not in re.sub(r"url\(#ramp-\d+\)", "", page)
    for tensor in result.tensors:
        row = re.search(rf'<tr class="\w+" data-tensor="{tensor.name}">(.*?)</tr>', page).group(1)
        assert f">{tensor.n}<" in row and f">{tensor.max_abs_diff:.2e}<" in row and tensor.dtype in row
        assert ("MISMATCH" in row) == (not tensor.ok)
        if tensor.max_ulp is not None:
            assert f">{tensor.max_ulp}<" in row
    assert page.count("<svg") == 1 + 2 + 1  # overall, two float tensors' histograms, one error map


def test_a_large_file_tensor_gives_the_histogram_and_map_of_the_in_memory_pair(tmp_path):
    reference = np.random.default_rng(4).standard_normal((1200, 1000)).astype(np.float32)
    candidate = nudged(reference, 5)
    candidate[900:905, 10:12] = np.nan
    candidate[3, 999] += 1.0
    write_dump(Dump(tensors={"big": reference}, metadata={}), tmp_path / "reference.safetensors")
    write_dump(Dump(tensors={"big": candidate}, metadata={}), tmp_path / "candidate.safetensors")
    from_files = compare_dumps(read_dump(tmp_path / "reference.safetensors"), read_dump(tmp_path / "candidate.safetensors"),
                               distributions=True)
    assert isinstance(read_dump(tmp_path / "reference.safetensors").tensors["big"], FileTensor)
    in_memory = compare_dumps(*dumps_of({"big": reference}, {"big": candidate}), distributions=True)
    streamed, held = from_files.tensors[0], in_memory.tensors[0]
    assert streamed.ulp_histogram == held.ulp_histogram
    assert streamed.ulp_histogram["counts"] == expected_histogram(reference, candidate)[0]
    assert streamed.ulp_histogram["unbounded"] == 10
    assert streamed.error_map == held.error_map


# --- the command line ------------------------------------------------------------------------------


@pytest.fixture
def dump_pair(tmp_path):
    reference, candidate = planted_pair()
    write_dump(Dump(tensors={"w": reference}, metadata={}), tmp_path / "reference.safetensors")
    write_dump(Dump(tensors={"w": candidate}, metadata={}), tmp_path / "candidate.safetensors")
    return str(tmp_path / "reference.safetensors"), str(tmp_path / "candidate.safetensors")


def test_html_combines_with_json_output(dump_pair, tmp_path, capsys):
    page = tmp_path / "report.html"
    assert main(["compare", *dump_pair, "--html", str(page), "--format", "json"]) == 1
    result = json.loads(capsys.readouterr().out)
    assert result["tensors"][0]["error_map"]["cells"] == [MAX_CELLS, MAX_CELLS]
    assert 'data-tensor="w"' in page.read_text()


def test_histogram_flag_adds_the_keys_and_text_output_is_unchanged(dump_pair, tmp_path, capsys):
    assert main(["compare", *dump_pair, "--histogram", "--format", "json"]) == 1
    assert "ulp_histogram" in json.loads(capsys.readouterr().out)["tensors"][0]
    assert main(["compare", *dump_pair, "--format", "json"]) == 1
    assert "ulp_histogram" not in json.loads(capsys.readouterr().out)["tensors"][0]
    main(["compare", *dump_pair])
    plain = capsys.readouterr().out
    main(["compare", *dump_pair, "--html", str(tmp_path / "page.html")])
    assert capsys.readouterr().out == plain


@pytest.mark.parametrize("where", ["missing-folder/report.html", "is-a-folder", "reference.safetensors/report.html"])
def test_an_unusable_html_path_is_one_line_and_exit_2(dump_pair, tmp_path, capsys, where):
    (tmp_path / "is-a-folder").mkdir()
    before = sorted(p.name for p in tmp_path.rglob("*"))
    assert main(["compare", *dump_pair, "--html", str(tmp_path / where)]) == 2
    captured = capsys.readouterr()
    assert captured.out == "" and len(captured.err.strip().splitlines()) == 1 and captured.err.startswith("error: --html")
    assert sorted(p.name for p in tmp_path.rglob("*")) == before



def test_section_ids_and_legend_ids_are_unique_and_each_map_draws_its_own_legend():
    names = ["fc.weight", "fc_weight", "fc-weight", "fc/weight", "fc weight", "fc–weight"]
    reference = {name: np.float32([[1, 2], [3, 4]]) for name in names}
    candidate = {name: np.float32([[1, 2], [3, 4 + k]]) for k, name in enumerate(names, 1)}  # each its own largest |diff|
    page = render_html(compare_dumps(Dump(reference), Dump(candidate), distributions=True))
    ids = re.findall(r' id="([^"]+)"', page)
    assert len(ids) == len(set(ids)) == 2 * len(names)  # a section and a colour ramp each
    links = re.findall(r'<a href="#([^"]+)">', page)
    assert len(links) == len(names) and set(links) <= set(ids)
    for svg in re.findall(r"<svg.*?</svg>", page, re.S):
        used = re.findall(r"url\(#([^)]+)\)", svg)
        assert set(used) <= set(re.findall(r'<linearGradient id="([^"]+)"', svg))  # a legend draws its own map's ramp


def test_a_page_of_many_tensors_shows_the_failing_ones_first_and_says_what_it_left_out():
    count = MAX_SHOWN + 500
    reference = {f"t{k:05d}": np.float32([k]) for k in range(count)}
    candidate = {name: value + (1 if name in ("t00100", "t02400") else 0) for name, value in reference.items()}
    result = compare_dumps(Dump(reference), Dump(candidate), distributions=True)
    page = render_html(result)
    shown = re.findall(r'<tr class="\w+" data-tensor="([^"]+)"', page)
    assert len(shown) == MAX_SHOWN and "t00100" in shown and "t02400" in shown
    assert shown == sorted(shown) and shown[:3] == ["t00000", "t00001", "t00002"]
    assert page.count("<section") == MAX_SHOWN
    assert (f"{count} tensors were compared; this page shows {MAX_SHOWN} of them: all 2 failing and the first "
            f"{MAX_SHOWN - 2} of the {count - 2} passing.") in page
    assert re.search(r'data-bin="0" data-count="(\d+)"', page).group(1) == str(count - 2)  # the overall histogram counts all
    few, left_out = shown_tensors(result.tensors[:10])
    assert few == result.tensors[:10] and left_out == ""


def test_text_from_files_reaches_the_page_escaped_and_without_control_characters():
    metadata = {"framework": "\nworst=0.00e+00 tol=1e-06 OK\x1b[31m<b>"}
    page = render_html(compare_dumps(Dump({"w": np.float32([1])}, metadata), Dump({"w": np.float32([1])})))
    assert "\x1b" not in page and "<b>" not in page and "\\x1b[31m&lt;b&gt;" in page


def test_the_page_shows_the_tolerance_each_dtype_was_judged_by():
    """A float32 reference against a float16 candidate is judged by float16's defaults: the page
    says so, as the text report's `tolerance:` line does, not the float32 formula alone."""
    reference = Dump({"w": np.float32([1.0, 2.0])}, {})
    candidate = Dump({"w": np.float16([1.0, 2.001])}, {})
    result = compare_dumps(reference, candidate)
    page = render_html(result)
    assert "by dtype: F32/F16 atol=1e-05 rtol=0.001" in page, re.findall(r"tolerance: [^<]*", page)
