"""The matrix's loss-by-axis table gives axes that move together one row ("state + user: 0.40, not separable in
this design") in report.md and on the terminal, and matrix.png writes n in every cell (#60)."""

import io

from rich.console import Console

from topoeval.analysis.matrix import build_matrix
from topoeval.analysis.stats import metric_stats
from topoeval.report.matrix import _heatmap, matrix_md, print_matrix_table


def cell(model, topo, successes):
    per_task = {f"t{i}": {0: float(v)} for i, v in enumerate(successes)}
    return {"model": model, "baseline": "0-shot", "topology": topo, "role": "matrix",
            "metrics": {"success": metric_stats(per_task, True), "dq": metric_stats(per_task, True)},
            "diagnostics": {"samples": 1}}


AXES = {"a": {"state": "stateless", "user": "none", "format": "own"},
        "b": {"state": "stateful", "user": "hidden_slots", "format": "own"},
        "c": {"state": "stateless", "user": "none", "format": "hermes"}}


def matrix():
    cells = [cell("m", "a", [1] * 10), cell("m", "b", [1] * 6 + [0] * 4), cell("m", "c", [1, 1])]
    record = {"topologies": list(AXES), "axes": AXES,
              "train_topologies": {"m": {"topology": "a", "source": "--trained-on"}}}
    return build_matrix(cells, record)


def test_report_md_gives_axes_that_move_together_one_row_saying_they_are_not_separable():
    md = matrix_md(matrix())
    assert "| state + user | 0.40 | 1 | 0.40 | not separable in this design |" in md
    assert "| format | 0.00 | 1 | -0.40 |  |" in md
    assert not any(line.startswith("| state |") or line.startswith("| user |") for line in md)


def test_the_terminal_prints_the_loss_by_axis_with_the_group_as_one_row():
    out = io.StringIO()
    print_matrix_table(matrix(), Console(file=out, width=200))
    text = out.getvalue()
    assert "state + user: 0.40, not separable in this design" in text and "format: 0.00" in text


def test_matrix_png_writes_n_in_every_cell_with_a_mean():
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    m = matrix()
    fig, ax = plt.subplots()
    _heatmap(ax, m["rows"], m["topologies"], "success")
    texts = [t.get_text() for t in ax.texts]
    plt.close(fig)
    assert texts == ["1.00\n[1.00, 1.00]\nn=10", "0.60\n[0.30, 0.90]\nn=10", "1.00\n[1.00, 1.00]\nn=2"]
