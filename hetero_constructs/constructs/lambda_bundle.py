"""The Lambda package: the handlers, the core they validate with, and the part of botocore's
SageMaker model they use.

- The model is generated at build time from botocore's full model (never edited by hand): the
  shapes reachable from the inputs, outputs and errors of ``LAMBDA_OPERATIONS`` and of the
  operation the core reads, without documentation. The Lambda's botocore loads it through
  ``AWS_DATA_PATH``, so the handlers validate against the model the synth validated against.
- The handlers and the core ship without what only documentation uses: the rule catalogue
  generator, and, in every module, docstrings, comments, typing-only imports, ``__all__``
  lists and the catalogues' doc texts (``_lambda_trim``, the size trick behind its own module).
"""

from __future__ import annotations

import hashlib
import importlib.util
import io
import json
import lzma
import os
import shutil
import tempfile
import zipfile
from collections.abc import Iterable, Iterator, Mapping, Sequence
from functools import lru_cache
from pathlib import Path
from typing import Any

import botocore.loaders

from hetero_constructs.constructs._lambda_trim import bundled_source
from hetero_constructs.service import model as service_model

# The SageMaker operations the handlers call; extend it when a handler calls another one.
LAMBDA_OPERATIONS = (
    "CreateTrainingJob",
    "DescribeTrainingJob",
    "StopTrainingJob",
    "ListTrainingJobs",
    "ListTags",
    "AddTags",
)
# The folder under the package root that AWS_DATA_PATH names.
DATA_PATH = "botocore_data"
SERVICE = "sagemaker"
PACKAGE_ROOT = Path(__file__).resolve().parents[1]
# The functions' entry points: lambda/ in a checkout, the packaged copy
# (hetero_constructs.lambda_handlers, mapped by pyproject.toml's package-dir) when installed.
_CHECKOUT_HANDLERS = PACKAGE_ROOT.parent / "lambda"
# The handlers and the pure-Python layers they validate with (no CDK, no CLI, no local runner).
LAMBDA_LAYERS = ("spec", "service", "request", "contract", "checks", "planning.py", "handlers")
# Modules of those layers the Lambda never imports: the construct-only rule ids, the
# spec-field reference, the YAML reader and the spec-file writer (spec files only; the Lambda
# gets its spec as JSON and its runtime has no PyYAML); the run's metrics and dashboard (the
# constructs and the command line use them, on top of the training-script helper the Lambda
# does not ship).
LEFT_OUT = frozenset(
    {
        "checks/construct_rules.py",
        "spec/file/safe_yaml.py",
        "spec/file/writer.py",
        "spec/reference.py",
        "contract/metrics.py",
        "contract/dashboard.py",
    }
)
CACHE_ROOT = Path(tempfile.gettempdir()) / "hetero-constructs"
# What botocore never reads of a model: the documentation, and ``box`` (a Smithy nullability
# trait; botocore has no use for it).
_UNREAD_KEYS = frozenset({"documentation", "documentationUrl", "box"})


# -- The model -------------------------------------------------------------------------------


def _botocore_loader() -> botocore.loaders.Loader:
    """botocore's own data only (no AWS_DATA_PATH, no ~/.aws/models)."""
    builtin = os.path.join(os.path.dirname(botocore.loaders.__file__), "data")
    return botocore.loaders.Loader(extra_search_paths=[builtin], include_default_search_paths=False)


def _reachable(shapes: Mapping[str, Any], roots: Iterable[str]) -> set[str]:
    found: set[str] = set()
    pending = list(roots)
    while pending:
        name = pending.pop()
        if name in found:
            continue
        found.add(name)
        shape = shapes[name]
        refs = [*shape.get("members", {}).values()]
        refs += [shape[key] for key in ("member", "key", "value") if key in shape]
        pending.extend(ref["shape"] for ref in refs)
    return found


def _without_documentation(value: Any) -> Any:
    if isinstance(value, dict):
        return {k: _without_documentation(v) for k, v in value.items() if k not in _UNREAD_KEYS}
    if isinstance(value, list):
        return [_without_documentation(v) for v in value]
    return value


def trimmed_service_model(
    operations: Sequence[str] = LAMBDA_OPERATIONS,
) -> tuple[str, dict[str, Any]]:
    """The API version and the SageMaker model cut down to ``operations`` and what the core reads.

    Each operation keeps its definition; the shapes are those reachable from the operations'
    inputs, outputs and errors. Documentation strings are left out.
    """
    loader = _botocore_loader()
    version = loader.determine_latest_version(SERVICE, "service-2")
    full = loader.load_service_model(SERVICE, "service-2", version)
    kept = sorted({*operations, service_model.OPERATION})
    roots = [
        ref["shape"]
        for name in kept
        for operation in [full["operations"][name]]
        for ref in [operation.get("input"), operation.get("output"), *operation.get("errors", [])]
        if ref is not None
    ]
    shapes = full["shapes"]
    model = {key: value for key, value in full.items() if key not in ("operations", "shapes")}
    model["operations"] = {name: _without_documentation(full["operations"][name]) for name in kept}
    model["shapes"] = {
        name: _without_documentation(shapes[name]) for name in sorted(_reachable(shapes, roots))
    }
    return version, _without_documentation(model)


# -- The sources -------------------------------------------------------------------------------


def lambda_source() -> Path:
    """The folder holding the entry points ``submit.py`` and ``events.py``."""
    if _CHECKOUT_HANDLERS.is_dir():
        return _CHECKOUT_HANDLERS
    spec = importlib.util.find_spec("hetero_constructs.lambda_handlers")
    if spec is None or not spec.submodule_search_locations:
        raise FileNotFoundError("the Lambda handlers are missing from this installation")
    return Path(next(iter(spec.submodule_search_locations)))


def _core_files() -> Iterator[tuple[str, Path]]:
    paths: list[Path] = []
    for layer in LAMBDA_LAYERS:
        location = PACKAGE_ROOT / layer
        paths += sorted(location.rglob("*.py")) if location.is_dir() else [location]
    for path in paths:
        relative = path.relative_to(PACKAGE_ROOT).as_posix()
        if "__pycache__" not in path.parts and relative not in LEFT_OUT:
            yield f"hetero_constructs/{relative}", path


def _handler_files() -> Iterator[tuple[str, Path]]:
    for path in sorted(lambda_source().glob("*.py")):
        yield path.name, path


MODULE_ARCHIVE = "hetero_constructs/_modules.xz"
# The package's own ``hetero_constructs/__init__.py``: it serves the core's modules from one
# solid LZMA archive (a zip compresses each file alone: the core's 30 sources shrink to 43 KB
# together against 65 KB apart). It stands in for the real package ``__init__``: the handlers
# import no top-level name, and most of those are the constructs', which the Lambda lacks. Its
# ``_Archive`` finds and loads ``hetero_constructs.*`` from the archive (tracebacks show the
# source). No docstrings: every byte of it ships in the package.
_BOOTSTRAP = """import importlib.abc as _abc
import importlib.machinery as _machinery
import lzma as _lzma
import os as _os
import sys as _sys

_HERE = _os.path.dirname(_os.path.abspath(__file__))
with open(_os.path.join(_HERE, "_modules.xz"), "rb") as _archive:
    _PARTS = _lzma.decompress(_archive.read()).decode().split("\\0")
_SOURCES = dict(zip(_PARTS[::2], _PARTS[1::2]))


class _Archive(_abc.MetaPathFinder, _abc.InspectLoader):
    def _relative(self, fullname):
        parts = fullname.split(".")
        if parts[0] != __name__ or len(parts) == 1:
            return None
        base = "/".join(parts[1:])
        for candidate in (base + ".py", base + "/__init__.py"):
            if candidate in _SOURCES:
                return candidate
        return None

    def find_spec(self, fullname, path=None, target=None):
        relative = self._relative(fullname)
        if relative is None:
            return None
        package = relative.endswith("__init__.py")
        spec = _machinery.ModuleSpec(
            fullname, self, origin=_os.path.join(_HERE, relative), is_package=package
        )
        spec.has_location = True
        return spec

    def is_package(self, fullname):
        return self._relative(fullname).endswith("__init__.py")

    def get_source(self, fullname):
        return _SOURCES[self._relative(fullname)]

    def get_code(self, fullname):
        relative = self._relative(fullname)
        return compile(_SOURCES[relative], _os.path.join(_HERE, relative), "exec")


_sys.meta_path.insert(0, _Archive())
"""


# Text in one LZMA2 stream: no integrity check (the zip has its CRC), literal coding tuned for
# text (pb=0: no 4-byte alignment). Each module is ``name NUL source NUL``: Python sources hold
# no NUL, and unlike JSON nothing is escaped (about 650 bytes less, zipped).
_ARCHIVE_FILTERS = [
    {"id": lzma.FILTER_LZMA2, "preset": 9 | lzma.PRESET_EXTREME, "lc": 3, "lp": 0, "pb": 0}
]


def module_archive(sources: Mapping[str, str]) -> bytes:
    """The core's modules (package-relative path -> source) as the package ships them."""
    text = "\0".join(part for name in sorted(sources) for part in (name, sources[name]))
    return lzma.compress(text.encode(), check=lzma.CHECK_NONE, filters=_ARCHIVE_FILTERS)


def read_module_archive(data: bytes) -> dict[str, str]:
    """``module_archive``'s sources back, as the package's bootstrap reads them."""
    parts = lzma.decompress(data).decode().split("\0")
    return dict(zip(parts[::2], parts[1::2], strict=True))


def package_files() -> dict[str, bytes]:
    """Every file of the Lambda package: archive name -> content.

    The entry points are plain files; the handlers and the core are one solid archive
    (``MODULE_ARCHIVE``) that the package's ``hetero_constructs/__init__.py`` serves modules from.
    """
    files = {
        name: bundled_source(path.read_text(encoding="utf-8")).encode()
        for name, path in _handler_files()
    }
    sources = {
        name.removeprefix("hetero_constructs/"): bundled_source(path.read_text(encoding="utf-8"))
        for name, path in _core_files()
    }
    files[MODULE_ARCHIVE] = module_archive(sources)
    files["hetero_constructs/__init__.py"] = _BOOTSTRAP.encode()
    version, model = trimmed_service_model()
    model_text = json.dumps(model, sort_keys=True, separators=(",", ":"))
    files[f"{DATA_PATH}/{SERVICE}/{version}/service-2.json"] = model_text.encode()
    return files


# -- The package ------------------------------------------------------------------------------


def _fingerprint() -> tuple[tuple[str, int, int], ...]:
    """What the package is built from: sources and model files, by size and time."""
    model_dir = Path(botocore.loaders.__file__).parent / "data" / SERVICE
    paths = [path for _, path in (*_handler_files(), *_core_files())]
    paths += sorted(model_dir.rglob("service-2.json*"))
    return tuple((str(p), p.stat().st_size, p.stat().st_mtime_ns) for p in paths)


@lru_cache(maxsize=4)
def _staged(fingerprint: tuple[tuple[str, int, int], ...]) -> Path:
    files = package_files()
    digest = hashlib.sha256()
    for name in sorted(files):
        digest.update(name.encode() + b"\0" + files[name] + b"\0")
    target = CACHE_ROOT / f"lambda-{digest.hexdigest()[:32]}"
    if not target.is_dir():
        CACHE_ROOT.mkdir(parents=True, exist_ok=True)
        partial = Path(tempfile.mkdtemp(dir=CACHE_ROOT))
        for name, content in files.items():
            destination = partial / name
            destination.parent.mkdir(parents=True, exist_ok=True)
            destination.write_bytes(content)
        try:
            partial.replace(target)
        except OSError:  # another process staged the same content first
            shutil.rmtree(partial, ignore_errors=True)
    return target


def lambda_package() -> Path:
    """A staged folder: the entry points, ``hetero_constructs`` with the handlers and the core,
    and the model.

    The model is ``botocore_data/sagemaker/<version>/service-2.json``; point ``AWS_DATA_PATH``
    at ``botocore_data`` in the package. The folder is content-addressed: the same sources give
    the same folder, so the asset hash changes only when the package does.
    """
    staged = _staged(_fingerprint())
    if not staged.is_dir():  # the temporary folder was cleaned meanwhile
        _staged.cache_clear()
        staged = _staged(_fingerprint())
    return staged


def zip_bytes(directory: Path) -> bytes:
    """The folder as a deterministic zip: sorted entries, fixed times, deflate level 9 (the
    compression the CDK uses for directory assets), caches left out."""
    archive = io.BytesIO()
    with zipfile.ZipFile(archive, "w", zipfile.ZIP_DEFLATED, compresslevel=9) as zipped:
        for path in sorted(p for p in directory.rglob("*") if p.is_file()):
            name = path.relative_to(directory).as_posix()
            if "__pycache__" in name or name.endswith(".pyc"):
                continue
            info = zipfile.ZipInfo(name, date_time=(1980, 1, 1, 0, 0, 0))
            info.external_attr = 0o644 << 16
            # The module archive is compressed already: deflate would only grow it.
            method = zipfile.ZIP_STORED if name == MODULE_ARCHIVE else zipfile.ZIP_DEFLATED
            zipped.writestr(info, path.read_bytes(), method, 9)
    return archive.getvalue()


__all__ = [
    "DATA_PATH",
    "LAMBDA_LAYERS",
    "LAMBDA_OPERATIONS",
    "lambda_package",
    "lambda_source",
    "module_archive",
    "package_files",
    "read_module_archive",
    "trimmed_service_model",
    "zip_bytes",
]
