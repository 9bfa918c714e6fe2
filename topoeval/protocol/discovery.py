"""Finding suites and protocols: ``--suites-dir`` folders, entry points, and the shipped protocols.

Nothing here finds files through the repository's location. The shipped suites and protocols are
part of the distribution (``pyproject.toml`` maps the repository's ``tool_suites/`` and
``protocols/`` into it as the packages ``topoeval_tool_suites`` and ``topoeval_protocols``):

- suites are registered through the ``topoeval.suites`` entry-point group, the shipped ones by
  topoeval's own distribution exactly like a third party's; a suite's entry point gives a
  :class:`~topoeval.core.suite.Suite`, a callable returning one, or the path of a suite folder;
- shipped protocols are read with :mod:`importlib.resources` from ``topoeval_protocols``.

An editable install and a wheel resolve both the same way (setuptools maps the packages to the
checkout's folders in the first case).
"""

from __future__ import annotations

import importlib
import importlib.machinery
import importlib.util
import os
import sys
from collections.abc import Sequence
from importlib.metadata import EntryPoint, distributions, entry_points
from importlib.resources import files
from pathlib import Path

import yaml
from pydantic import ValidationError

from topoeval.core.errors import UserError, did_you_mean
from topoeval.core.suite import Suite, SuiteManifest
from topoeval.core.yamlfile import load_yaml, read_yaml_file

ENTRY_POINT_GROUP = "topoeval.suites"
#: the distribution whose entry points are the shipped suites
DISTRIBUTION = "topoeval"
#: the package the shipped protocols are installed as (the repository's protocols/ folder)
PROTOCOLS_PACKAGE = "topoeval_protocols"


def shipped_protocols_dir() -> Path:
    """The installed folder of the shipped protocols (a real folder: topoeval is not zip-safe)."""
    try:
        return Path(str(files(PROTOCOLS_PACKAGE)))
    except ModuleNotFoundError:  # an install from before the protocols were packaged
        raise UserError(f"the shipped protocols ({PROTOCOLS_PACKAGE}) are not installed; reinstall topoeval: "
                        "pip install topoeval (from a checkout: pip install -e .)") from None


def suite_entry_points() -> dict[str, EntryPoint]:
    """The ``topoeval.suites`` entry points by name. Where another package registers a name that
    topoeval ships, the shipped suite wins (a name means one suite on every machine); a user's own
    suite of that name goes in a ``--suites-dir`` folder, which wins over every entry point.

    topoeval's own entry points are read from every copy of its metadata on ``sys.path``, the first
    winning: run from a checkout's root, a stale ``topoeval.egg-info`` there (left by an old build)
    would otherwise hide the installed metadata, and with it every shipped suite."""
    others = [ep for ep in entry_points(group=ENTRY_POINT_GROUP) if _dist_name(ep) != DISTRIBUTION]
    shipped = [ep for dist in distributions(name=DISTRIBUTION)
               for ep in dist.entry_points.select(group=ENTRY_POINT_GROUP)]
    return {ep.name: ep for ep in [*others, *reversed(shipped)]}


def _dist_name(ep: EntryPoint) -> str | None:
    return ep.dist.name if ep.dist is not None else None


class SuiteRegistry:
    """Suites by name: the folders of ``suites_dirs`` and ``$TOPOEVAL_SUITES_PATH``, then the
    ``topoeval.suites`` entry points (the shipped suites among them). Earlier folders win over later
    ones; folders win over entry points."""

    def __init__(self, suites_dirs: Sequence[str | Path] = ()):
        extra = [p for p in os.environ.get("TOPOEVAL_SUITES_PATH", "").split(os.pathsep) if p]
        self.dirs = [Path(d) for d in [*suites_dirs, *extra]]
        self._folders: dict[str, Path] = {}
        for d in reversed(self.dirs):
            if d.is_dir():
                for sub in sorted(d.iterdir()):
                    if (sub / "suite.yaml").is_file():
                        self._folders[sub.name] = sub
        self._entry_points = suite_entry_points()
        self._cache: dict[str, Suite] = {}

    def names(self) -> list[str]:
        return sorted(set(self._folders) | set(self._entry_points))

    def __contains__(self, name: str) -> bool:
        return name in self._folders or name in self._entry_points

    def get(self, name: str) -> Suite:
        if name not in self._cache:
            if name in self._folders:
                self._cache[name] = load_suite_folder(self._folders[name])
            elif name in self._entry_points:
                self._cache[name] = _load_entry_point(self._entry_points[name])
            else:
                raise UserError(f"unknown suite '{name}'{did_you_mean(name, self.names())}")
        return self._cache[name]


def load_suite_folder(folder: str | Path) -> Suite:
    """Load a suite from a folder holding ``suite.yaml`` and its Python world."""
    folder = Path(folder).resolve()
    manifest_path = folder / "suite.yaml"
    try:
        raw = load_yaml(read_yaml_file(manifest_path), str(manifest_path))
    except (OSError, yaml.YAMLError) as exc:
        raise UserError(f"{manifest_path}: cannot read suite manifest: {exc}") from None
    try:
        manifest = SuiteManifest.model_validate(raw or {})
    except ValidationError as exc:
        first = exc.errors()[0]
        loc = ".".join(str(p) for p in first["loc"])
        raise UserError(f"{manifest_path}: {loc}: {first['msg']}") from None
    if manifest.name != folder.name:
        raise UserError(f"{manifest_path}: name '{manifest.name}' differs from its folder '{folder.name}'")
    module_file, _, class_name = manifest.suite.partition(":")
    package = _import_folder_as_package(folder, manifest.name)
    module_name = f"{package}.{Path(module_file).stem}"
    try:
        module = importlib.import_module(module_name)
        cls = getattr(module, class_name)
    except (ImportError, AttributeError) as exc:
        raise UserError(f"{manifest_path}: suite '{manifest.suite}' cannot be loaded: {exc}") from None
    if not (isinstance(cls, type) and issubclass(cls, Suite)):
        raise UserError(f"{manifest_path}: suite '{manifest.suite}' is not a topoeval.core.suite.Suite subclass")
    return cls(manifest, str(folder))


def _import_folder_as_package(folder: Path, name: str) -> str:
    """Register ``folder`` as the package ``topoeval_suite_<name>`` so its modules import each other."""
    package = f"topoeval_suite_{name}"
    if package in sys.modules:
        return package
    init = folder / "__init__.py"
    spec = importlib.util.spec_from_file_location(
        package, init if init.exists() else None, submodule_search_locations=[str(folder)]
    )
    if spec is None:  # a folder without __init__.py: a namespace-like package
        spec = importlib.machinery.ModuleSpec(package, None, is_package=True)
        spec.submodule_search_locations = [str(folder)]
    module = importlib.util.module_from_spec(spec)
    sys.modules[package] = module
    if spec.loader is not None:
        spec.loader.exec_module(module)
    return package


def _load_entry_point(ep) -> Suite:
    obj = ep.load()
    if isinstance(obj, Suite):
        return obj
    if callable(obj):
        obj = obj()
    if isinstance(obj, Suite):
        return obj
    if isinstance(obj, (str, Path)):
        return load_suite_folder(obj)
    raise UserError(f"entry point '{ep.name}' ({ep.value}) gives neither a Suite nor a suite folder")


def protocol_names() -> list[str]:
    """The shipped protocols' names."""
    return sorted(p.stem for p in shipped_protocols_dir().glob("*.yaml"))


def looks_like_path(path_or_name: str | Path) -> bool:
    """A protocol argument that names a file: it holds a folder separator or ends in .yaml/.yml.
    Anything else is a name, looked up among the shipped protocols only, so a file in the current
    folder called like a shipped protocol (``wiki_to_travel``) never stands in for it."""
    text = str(path_or_name)
    return "/" in text or os.sep in text or text.endswith((".yaml", ".yml"))


def resolve_protocol_path(path_or_name: str | Path) -> Path:
    """A protocol path as given (it looks like one: :func:`looks_like_path`), or a shipped protocol by name."""
    p = Path(path_or_name)
    if looks_like_path(path_or_name):
        if not p.is_file():
            raise UserError(f"{p}: no such protocol file")
        return p
    shipped = shipped_protocols_dir() / f"{path_or_name}.yaml"
    if shipped.is_file():
        return shipped
    here = f"; for the file '{path_or_name}' in this folder write ./{path_or_name}" if p.is_file() else ""
    raise UserError(f"unknown protocol '{path_or_name}'{did_you_mean(str(path_or_name), protocol_names())}{here}")


def is_shipped_protocol(path: str | Path) -> bool:
    """Whether ``path`` is one of the shipped protocol files (trusted: see :mod:`topoeval.core.commands`)."""
    try:
        return Path(path).resolve().parent == shipped_protocols_dir().resolve()
    except UserError:
        return False
