"""Everything that shapes an evaluation, in one typed place (CLI flags and TOML config map onto it).

The metrics are not named here: which exist, their score names, default thresholds and parameters
come from the metric registry (``offline_eval.metrics``).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from offline_eval.metrics import (
    default_metrics,
    default_thresholds,
    metric_names,
    param_fields,
    score_owner,
    score_spec,
    score_specs,
)
from offline_eval.metrics.base import VERDICT_SCORING, Metric
from offline_eval.metrics.criteria import (
    DEFAULT_THRESHOLD,
    CriterionError,
    CriterionSpec,
    define_criterion,
    is_criterion,
    parse_criteria,
)


@dataclass
class EvalConfig:
    metrics: tuple[str, ...] = field(default_factory=default_metrics)  # the registered metrics on by default
    judge: str = "qwen2.5-coder-1.5b"
    judge_url: str | None = None  # an OpenAI-compatible server on this network instead of llama.cpp
    judge_model: str | None = None  # the model name to ask that server for
    embedder: str | None = None  # None: all-MiniLM-L6-v2 for English, USE multilingual for Chinese
    language: str = "auto"  # auto | en | zh
    seed: int = 0
    verdict_scoring: str = "probability"  # probability | hard (a yes/no verdict counts as the judge's P(yes))
    n_ctx: int = 8192
    n_threads: int | None = None  # per judge process: all cores in-process, cores ÷ workers with workers
    n_gpu_layers: int = 0
    # Scaling out. workers: that many llama.cpp judge processes on Ray (this machine unless ray_address
    # names a cluster: "auto", "HOST:PORT"). concurrency: requests in flight to a judge server.
    workers: int | None = None
    ray_address: str | None = None
    concurrency: int = 1
    use_cache: bool = True
    cache_path: Path | None = None  # None: <home>/judge-cache.sqlite
    thresholds: dict[str, float] = field(default_factory=default_thresholds)
    category_thresholds: dict[str, dict[str, float]] = field(default_factory=dict)
    gate_on: str = "mean"  # mean | lower (the bootstrap interval's lower bound) | ppi (needs labels)
    labels: Path | None = None  # reviewed items (labels.jsonl from report.html): PPI-corrected means
    allow_empty: bool = False  # a gated metric with no computable sample is skipped instead of failing
    n_resamples: int = 2000
    verbose: bool = False
    # Metric parameters by name (max_claims, n_questions...), over the defaults of each metric's Params.
    params: dict[str, int] = field(default_factory=dict)
    # Custom yes/no criteria by name; each is a metric of that name, always run.
    criteria: dict[str, CriterionSpec] = field(default_factory=dict)

    def __getattr__(self, name: str) -> Any:
        # config.max_claims: a metric parameter reads like any other setting.
        fields = param_fields()
        if name in fields and name != "params":
            return self.params.get(name, fields[name].default)
        raise AttributeError(name)

    def metric_params(self, metric: type[Metric]) -> Any:
        """The metric's Params dataclass, filled from these settings."""
        return metric.Params(**{f.name: getattr(self, f.name) for f in dataclasses.fields(metric.Params)})

    def all_params(self) -> dict[str, int]:
        """Every registered metric's parameter values (what ``run.params`` records)."""
        return {name: getattr(self, name) for name in param_fields()}


class ConfigError(ValueError):
    """A config file or option that makes no sense; the message names the file and key."""


def read_config_file(path: Path) -> dict:
    """Settings from a TOML file: its ``[tool.offline-eval]`` table if it has one, else the whole file."""
    import tomllib

    try:
        raw = tomllib.loads(Path(path).read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise ConfigError(f"{path}: config file not found") from None
    except (tomllib.TOMLDecodeError, UnicodeDecodeError) as exc:
        raise ConfigError(f"{path}: not valid TOML ({exc})") from None
    table = raw.get("tool", {}).get("offline-eval")
    return dict(table if table is not None else raw)


def find_config_file(start: Path) -> Path | None:
    """``offline-eval.toml``, or a ``pyproject.toml`` with a ``[tool.offline-eval]`` table, in ``start``."""
    import tomllib

    own = start / "offline-eval.toml"
    if own.exists():
        return own
    pyproject = start / "pyproject.toml"
    if pyproject.exists():
        try:
            parsed = tomllib.loads(pyproject.read_text(encoding="utf-8"))
        except (tomllib.TOMLDecodeError, UnicodeDecodeError):
            return None  # not ours to complain about: it may not be meant for us at all
        if "offline-eval" in parsed.get("tool", {}):
            return pyproject
    return None


def _typed(name: str, value: Any, source: str) -> Any:
    """Check a setting's value against EvalConfig's field types; ConfigError names the setting."""
    def fail(expected: str) -> ConfigError:
        return ConfigError(f"{source}: setting {name!r} must be {expected}, not {value!r}")

    def number(v: Any) -> float:
        if isinstance(v, bool) or not isinstance(v, (int, float)):
            raise fail("numbers (e.g. 0.8)")
        return float(v)

    if name == "criteria":
        try:
            return parse_criteria(value)
        except CriterionError as exc:
            raise ConfigError(f"{source}: {exc}") from None
    if name == "metrics":
        if isinstance(value, str):
            return tuple(m.strip() for m in value.split(",") if m.strip())
        if isinstance(value, (list, tuple)) and all(isinstance(m, str) for m in value):
            return tuple(value)
        raise fail("a list of metric names")
    if name == "thresholds":
        if not isinstance(value, dict):
            raise fail("a table of METRIC = VALUE")
        return {str(k): number(v) for k, v in value.items()}
    if name == "category_thresholds":
        if not isinstance(value, dict) or not all(isinstance(t, dict) for t in value.values()):
            raise fail("a table of CATEGORY = { METRIC = VALUE }")
        return {str(c): {str(k): number(v) for k, v in t.items()} for c, t in value.items()}
    if name in _INT_FIELDS or name in param_fields():
        if isinstance(value, bool) or not isinstance(value, int):
            raise fail("an integer")
        return value
    if name in _BOOL_FIELDS:
        if not isinstance(value, bool):
            raise fail("true or false")
        return value
    if name in _PATH_FIELDS:
        if value is None:
            return None
        if not isinstance(value, (str, Path)):
            raise fail("a path")
        return Path(value)
    if name in _OPTIONAL_INT_FIELDS:
        if value is not None and (isinstance(value, bool) or not isinstance(value, int)):
            raise fail("an integer")
        return value
    if value is not None and not isinstance(value, str):
        raise fail("a string")
    return value


_INT_FIELDS = {"seed", "n_ctx", "n_gpu_layers", "n_resamples", "concurrency"}
_OPTIONAL_INT_FIELDS = {"n_threads", "workers"}
_BOOL_FIELDS = {"use_cache", "verbose", "allow_empty"}
_PATH_FIELDS = {"cache_path", "labels"}
# The smallest value each integer setting can take and still give a run that means something (metric
# parameters carry their own floor). seed: llama.cpp takes a 32-bit unsigned seed; n_ctx: the prompts
# alone need a few hundred tokens.
_INT_RANGES = {
    "seed": (0, 2**32 - 1),
    "n_ctx": (512, None),
    "n_threads": (1, None),
    "n_gpu_layers": (-1, None),  # -1: every layer
    "n_resamples": (1, None),
    "workers": (1, None),
    "concurrency": (1, None),
}
RAY_INSTALL = "pip install 'offline-eval[ray]'"


def apply_settings(config: EvalConfig, settings: dict, source: str) -> EvalConfig:
    """Overlay settings (from a file or flags) on a config, checking names and value types."""
    aliases = {"lang": "language"}
    # Criteria first: they register the metrics that this layer's metric list and thresholds may name.
    for key, value in sorted(settings.items(), key=lambda item: item[0] != "criteria"):
        name = aliases.get(key, key).replace("-", "_")
        if name not in setting_names():
            raise ConfigError(f"{source}: unknown setting {key!r}")
        value = _typed(name, value, source)
        if name == "criteria":
            _define_criteria(config, value, source)
            continue
        if name == "thresholds":
            value = {**config.thresholds, **value}
        if name == "metrics" and value and all(m.startswith("+") for m in value):
            value = (*config.metrics, *(m[1:] for m in value if m[1:] not in config.metrics))  # added to the list
        if name in param_fields():
            config.params[name] = value
        else:
            setattr(config, name, value)
    # A defined criterion always runs, whatever the metric list says.
    config.metrics = (*config.metrics, *(c for c in config.criteria if c not in config.metrics))
    validate(config, source)
    return config


def _define_criteria(config: EvalConfig, specs: dict[str, CriterionSpec], source: str) -> None:
    """Register each criterion's metric and give it its gate threshold (its own, or the default)."""
    for name, spec in specs.items():
        try:
            define_criterion(spec)
        except CriterionError as exc:
            raise ConfigError(f"{source}: {exc}") from None
        config.criteria[name] = spec
        if spec.threshold is not None or name not in config.thresholds:
            config.thresholds = {**config.thresholds, name: DEFAULT_THRESHOLD if spec.threshold is None
                                 else spec.threshold}


def setting_names() -> set[str]:
    """Every setting a file, a flag or ``evaluate()`` may give: EvalConfig's fields and the metric parameters."""
    return {f.name for f in dataclasses.fields(EvalConfig) if f.name != "params"} | set(param_fields())


def _check_ranges(config: EvalConfig, source: str) -> None:
    """Integer settings inside their ranges: caught here, not after hours of judging."""
    ranges = {**_INT_RANGES, **{name: (f.metadata["minimum"], f.metadata["maximum"])
                                 for name, f in param_fields().items()}}
    for name, (low, high) in ranges.items():
        value = getattr(config, name)
        if value is None and name in _OPTIONAL_INT_FIELDS:
            continue
        if isinstance(value, bool) or not isinstance(value, int):
            raise ConfigError(f"{source}: setting {name!r} must be an integer, not {value!r}")
        if value < low or (high is not None and value > high):
            bounds = f"between {low} and {high}" if high is not None else f"at least {low}"
            raise ConfigError(f"{source}: setting {name!r} must be {bounds}, not {value}")


def validate(config: EvalConfig, source: str) -> None:
    """Every setting checked, whatever it came from (file, flags, Python API); ConfigError names the source."""
    known = metric_names()
    if not config.metrics:
        raise ConfigError(f"{source}: no metric to run; choose from {', '.join(known)}")
    bad = [m for m in config.metrics if m not in known or (is_criterion(m) and m not in config.criteria)]
    if bad:
        choices = [m for m in known if not is_criterion(m) or m in config.criteria]
        raise ConfigError(f"{source}: unknown metric(s) {', '.join(bad)}; choose from {', '.join(choices)}")
    if len(set(config.metrics)) != len(config.metrics):
        raise ConfigError(f"{source}: a metric is named twice in {', '.join(config.metrics)}")
    _check_ranges(config, source)
    scores = {spec.name for spec in score_specs() if not is_criterion(score_owner(spec.name))
              or score_owner(spec.name) in config.criteria}
    for scope, table in [("", config.thresholds), *((f"{c}/", t) for c, t in config.category_thresholds.items())]:
        for metric, value in table.items():
            if metric not in scores:
                raise ConfigError(f"{source}: threshold for unknown metric {scope}{metric!r}")
            if not 0.0 <= float(value) <= 1.0:
                raise ConfigError(f"{source}: threshold {scope}{metric}={value} is outside [0, 1]")
            spec = score_spec(metric)
            if spec is not None and spec.higher_is_better is not True:
                raise ConfigError(f"{source}: {scope}{metric} is a diagnostic where higher is not better; it is "
                                  "reported and compared, not gated")
    if config.language not in ("auto", "en", "zh"):
        raise ConfigError(f"{source}: language must be auto, en or zh, not {config.language!r}")
    if config.gate_on not in ("mean", "lower", "ppi"):
        raise ConfigError(f"{source}: gate_on must be 'mean', 'lower' or 'ppi', not {config.gate_on!r}")

    if config.verdict_scoring not in VERDICT_SCORING:
        raise ConfigError(f"{source}: verdict_scoring must be 'hard' or 'probability', not {config.verdict_scoring!r}")
    _check_scaling(config, source)


def _check_scaling(config: EvalConfig, source: str) -> None:
    """Workers (Ray) are llama.cpp processes; concurrency is requests in flight to a judge server."""
    if config.workers is None and config.ray_address is None:
        if config.concurrency > 1 and not config.judge_url:
            raise ConfigError(f"{source}: concurrency {config.concurrency} is for a judge server (judge_url); "
                              "the llama.cpp judge runs one call at a time per process: use workers")
        return
    if config.judge_url:
        raise ConfigError(f"{source}: workers and ray_address run llama.cpp judges; a judge server is used in "
                          "parallel with concurrency instead")
    if config.ray_address is not None and not config.ray_address.strip():
        raise ConfigError(f"{source}: ray_address is empty (use 'auto' or HOST:PORT of a Ray cluster)")
    if (config.ray_address or "").startswith("ray://"):
        # Ray Client would run the driver's side (the cache, its reader) on the cluster's head, away
        # from this machine's cache file.
        raise ConfigError(f"{source}: ray_address {config.ray_address!r}: Ray Client (ray://) is not supported; "
                          "run offline-eval on a node of the cluster (ray start --address HEAD:PORT) with "
                          "ray_address 'auto'")
    import importlib.util

    if importlib.util.find_spec("ray") is None:  # finds the package without importing it
        raise ConfigError(f"{source}: workers and ray_address need Ray, which is not installed: {RAY_INSTALL}")


def check_complete(config: EvalConfig, source: str) -> None:
    """Settings that only make sense together, checked once every source is applied (a file may set
    gate_on and a flag the labels)."""
    if config.gate_on == "ppi" and config.labels is None:
        raise ConfigError(f"{source}: gate_on 'ppi' gates on the PPI-corrected mean, which needs reviewed "
                          "labels: pass --labels FILE (labels.jsonl exported from report.html)")


def check_against_data(config: EvalConfig, samples: Sequence[Any], source: str) -> None:
    """Settings that only make sense against the data: a category threshold needs that category."""
    from offline_eval.gate import unknown_categories

    categories = {s.category for s in samples}
    unknown = unknown_categories(config.category_thresholds, categories)
    if unknown:
        known = ", ".join(sorted(c for c in categories if c is not None)) or "none"
        raise ConfigError(f"{source}: category threshold for {', '.join(repr(c) for c in unknown)}: no sample has "
                          f"that category (categories in the data: {known})")
