"""Every generated file is what `python -m authoring regenerate` would write now: one test per
entry of the registry (authoring/registry.py), each failure naming the stale files and the
command. The registry is the one list of what is derived (stubs, README's tables, the
chapters' practice lists, GitHub Classroom's workflow, the catalogues and their compiled or
built editions, the teacher's guides); a new kind of generated file is a new entry, checked
here by itself.

The Chinese documents need po4a: that entry skips without it on a learner's machine and
fails in CI (CI=true), where .ci/run installs it."""
from __future__ import annotations

from pathlib import Path

import pytest

from authoring import registry
from authoring.course import REPO
from tests.sandbox_support import in_ci


def assert_fresh(root: Path, entries=registry.REGISTRY) -> None:
    """AssertionError naming every stale file of the course at ``root`` and the command."""
    stale = []
    for entry in entries:
        found = entry.stale(root)
        if found and all("po4a" in f for f in found) and not in_ci():
            pytest.skip(found[0])
        stale += [f"{entry.name}: {f}" for f in found]
    assert not stale, f"stale -- run `{registry.COMMAND}`:\n  " + "\n  ".join(stale[:20])


@pytest.mark.parametrize("entry", registry.REGISTRY, ids=[g.name for g in registry.REGISTRY])
def test_generated_files_are_fresh(entry):
    assert_fresh(REPO, [entry])


def test_the_registry_names_each_file_once():
    """No two entries write the same file, and the regenerate order puts the judge's
    catalogue (whose Chinese words the guide and the Chinese lists read) before them."""
    names = [g.name for g in registry.REGISTRY]
    files = [f.strip() for g in registry.REGISTRY for f in g.files.split(",")]
    assert len(set(files)) == len(files), files
    judge = names.index("the judge's catalogue, compiled")
    assert judge < names.index("the teacher's guide") < names.index("the Chinese README and guide")
    assert judge < names.index("the Chinese chapters")
