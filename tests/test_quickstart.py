"""quickstart._OwnModules finds dolmen's plain modules as the standard path finder does
(same file, loader, cache path) and leaves every other name to the standard finders."""

from __future__ import annotations

import importlib.machinery
from pathlib import Path

import dolmen
from dolmen.quickstart import _OwnModules, _plain_modules

PACKAGE = Path(dolmen.__file__).parent


def _standard(name: str, folder: Path) -> importlib.machinery.ModuleSpec | None:
    return importlib.machinery.PathFinder.find_spec(name, [str(folder)])


def test_a_plain_module_gets_the_spec_the_path_finder_makes() -> None:
    for name, folder in [
        ("dolmen.checks.model", PACKAGE / "checks"),
        ("dolmen.host.gpu.nvsmi", PACKAGE / "host" / "gpu"),
        ("dolmen.config", PACKAGE),
    ]:
        mine = _OwnModules.find_spec(name, [str(folder)])
        theirs = _standard(name, folder)
        assert mine is not None and theirs is not None
        assert (mine.name, mine.origin, mine.cached, mine.has_location, mine.parent) == (
            theirs.name,
            theirs.origin,
            theirs.cached,
            theirs.has_location,
            theirs.parent,
        )
        assert type(mine.loader) is type(theirs.loader)
        assert mine.submodule_search_locations is None


def test_packages_absent_names_and_other_names_go_to_the_standard_finders() -> None:
    assert _OwnModules.find_spec("dolmen.checks", [str(PACKAGE)]) is None  # a package
    assert _OwnModules.find_spec("dolmen.nothing_here", [str(PACKAGE)]) is None
    assert _OwnModules.find_spec("json", None) is None  # top level: not dolmen's
    assert _OwnModules.find_spec("dolmen.x", ["/a", "/b"]) is None  # several folders


def test_a_module_with_a_folder_or_an_extension_of_its_name_is_not_plain(tmp_path: Path) -> None:
    for name in ("plain.py", "shadowed.py", "native.py", "other.txt"):
        (tmp_path / name).write_text("")
    (tmp_path / "shadowed").mkdir()
    suffix = importlib.machinery.EXTENSION_SUFFIXES[0]
    (tmp_path / f"native{suffix}").write_text("")
    assert _plain_modules(str(tmp_path)) == {"plain"}
    assert _plain_modules(str(tmp_path / "absent")) == frozenset()
