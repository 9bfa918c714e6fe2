"""Every planned episode of a run by its position, without holding the keys.

A run plans model x baseline x topology x task x sample, in that order (plan order). A position is a
plain int and an episode's key is made from it when asked: a run of a million episodes holds its task
ids (once per topology, not per episode) and small arrays indexed by position, never a million key
strings.
"""

from __future__ import annotations

from array import array
from bisect import bisect_left, bisect_right
from collections.abc import Iterator

from topoeval.runner.episode import episode_key


class PlanIndex:
    """Positions of a run's planned episodes: ``models`` x ``baselines`` x ``topologies`` (each with its
    task ids) x ``samples`` samples, in plan order."""

    def __init__(self, models: list[str], baselines: list[str], task_ids: dict[str, list[str]],
                 topologies: list[str], samples: int):
        self.models, self.baselines, self.topologies, self.samples = models, baselines, topologies, samples
        self.task_ids = task_ids
        #: per topology, its task ids' hashes sorted, and each one's task index (16 bytes a task, where a dict
        #: of the ids would take about 180): a key's task is found by bisection, then checked by its key
        self._task_pos: dict[str, tuple[array, array]] = {}
        for t in topologies:
            pairs = sorted((hash(tid), i) for i, tid in enumerate(task_ids[t]))
            self._task_pos[t] = (array("q", [h for h, _ in pairs]), array("q", [i for _, i in pairs]))
        #: (model, baseline, topology) -> position of its first episode; cells in plan order
        self._cell_start: dict[tuple[str, str, str], int] = {}
        self._starts: list[int] = []
        self._cells: list[tuple[str, str, str]] = []
        pos = 0
        for m in models:
            for b in baselines:
                for t in topologies:
                    self._cell_start[(m, b, t)] = pos
                    self._starts.append(pos)
                    self._cells.append((m, b, t))
                    pos += len(task_ids[t]) * samples
        self._size = pos

    def __len__(self) -> int:
        return self._size

    def __iter__(self) -> Iterator[str]:
        return self.keys()

    def position_of(self, model: str, baseline: str, topology: str, task_index: int, sample: int) -> int:
        """The position of an episode given by its parts (the task by its index)."""
        return self._cell_start[(model, baseline, topology)] + task_index * self.samples + sample

    def entries(self) -> Iterator[tuple[int, str, str]]:
        """(position, model, key) of every planned episode, in plan order."""
        pos = 0
        for m, b, t in self._cells:
            for task_id in self.task_ids[t]:
                for s in range(self.samples):
                    yield pos, m, episode_key(m, b, t, task_id, s)
                    pos += 1

    def key(self, pos: int) -> str:
        """The key of the episode at ``pos``."""
        c = bisect_right(self._starts, pos) - 1
        m, b, t = self._cells[c]
        task, s = divmod(pos - self._starts[c], self.samples)
        return episode_key(m, b, t, self.task_ids[t][task], s)

    def keys(self) -> Iterator[str]:
        """Every key in plan order."""
        for m, b, t in self._cells:
            for task_id in self.task_ids[t]:
                for s in range(self.samples):
                    yield episode_key(m, b, t, task_id, s)

    def position(self, key: str) -> int | None:
        """The position of ``key``, None for a key this plan does not hold."""
        parts = key.split("|")
        if len(parts) < 5:
            return None
        m, b, t, s = parts[0], parts[1], parts[2], parts[-1]
        task_id = "|".join(parts[3:-1])
        start = self._cell_start.get((m, b, t))
        if start is None or not s.isdigit() or int(s) >= self.samples:
            return None
        hashes, indices = self._task_pos[t]
        h = hash(task_id)
        j = bisect_left(hashes, h)
        while j < len(hashes) and hashes[j] == h:  # a hash shared by two ids: the one whose key it is
            pos = start + indices[j] * self.samples + int(s)
            if self.key(pos) == key:
                return pos
            j += 1
        return None
