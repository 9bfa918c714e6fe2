"""The pictures of a run's report (topoeval.report.plots)."""

from topoeval.report.plots import plot_dimensions


def test_a_run_without_id_or_ood_roles_gets_no_empty_dimension_chart(tmp_path):
    """A transfer matrix's topologies have no id/ood role (issue 60): no ID-vs-OOD bars to draw, so no picture."""
    cells = [{"model": "m", "baseline": "0-shot", "topology": t, "role": None, "metrics": {}} for t in ("a", "b")]
    assert plot_dimensions({"cells": cells}, tmp_path / "plot_dimensions.png") is None
    assert not (tmp_path / "plot_dimensions.png").exists()
