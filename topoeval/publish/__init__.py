"""Publishing runs as a Hugging Face Hub dataset: tables, dataset card, merge, upload.

- :mod:`.tables` — results rows (one per protocol × model × baseline × topology × metric) and
  episode rows, read from run folders; the merge and the ``latest`` view.
- :mod:`.card` — the dataset card: YAML metadata declaring the configs, a leaderboard per
  protocol sorted by OOD success with ties marked, and how to reproduce each row.
- :mod:`.hub` — staging the folder (what ``--dry-run`` writes) and uploading it in one commit.
"""

from topoeval.publish.hub import publish, stage

__all__ = ["publish", "stage"]
