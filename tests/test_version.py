"""`topoeval --version` prints the package's version and exits 0 (issue 60)."""

from topoeval.core.version import __version__


def test_version_prints_the_package_version(cli):
    done = cli("--version")
    assert done.returncode == 0 and done.stdout.strip() == f"topoeval {__version__}"
