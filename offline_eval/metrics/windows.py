"""Fitting a sample's retrieved context into the judge's window, by the judge's own token count."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from offline_eval import prompts
from offline_eval.judge import JudgeError, JudgeRequest
from offline_eval.metrics.base import SampleContext
from offline_eval.prompts import Verdict, YesNoTask


@dataclass
class Window:
    """Part of a sample's context that fits the judge beside one task: (rank, text) pairs."""

    chunks: list[tuple[int, str]]
    truncated: list[int]  # ranks of chunks cut to fit on their own

    def block(self, lang: str) -> str:
        return prompts.context_block(self.chunks, lang)


def longest_fitting_prefix(text: str, fits: Callable[[str], bool]) -> str:
    """The longest prefix of ``text`` that ``fits`` (binary search on the cut point); "" if none does.

    Token counts grow with the prefix (a merge at the cut can move them by a token, which the search
    absorbs: the prefix returned was itself checked), so the tokenizer, not a character ratio, decides.
    """
    low, high = 0, len(text)
    while low < high:
        mid = (low + high + 1) // 2
        if fits(text[:mid]):
            low = mid
        else:
            high = mid - 1
    return text[:low]


def _fits(ctx: SampleContext, probes: list[JudgeRequest]) -> Callable[[list[tuple[int, str]]], bool]:
    """Whether a block of chunks fits the judge's window beside each of ``probes``' tasks."""
    room = min(ctx.judge.room_for_shared(probe) for probe in probes)
    return lambda chunks: ctx.judge.count_tokens(prompts.context_block(chunks, ctx.lang)) <= room


def _cut_to_fit(ctx: SampleContext, fits: Callable[[list[tuple[int, str]]], bool]
                ) -> tuple[list[tuple[int, str]], set[int]]:
    """The ranked chunks, each cut to the longest prefix that fits on its own; and the ranks cut."""
    chunks = list(enumerate(ctx.sample.contexts, 1))
    cut: set[int] = set()
    for i, (rank, text) in enumerate(chunks):
        if not fits([(rank, text)]):
            kept = longest_fitting_prefix(text, lambda t, r=rank: fits([(r, t)]))
            if not kept:
                raise JudgeError(f"the judge's window ({ctx.judge.n_ctx} tokens) leaves no room for any context")
            chunks[i] = (rank, kept)
            cut.add(rank)
    return chunks, cut


def chunk_windows(ctx: SampleContext, probes: list[JudgeRequest]) -> list[Window]:
    """One window per retrieved chunk, in rank order, each fitting beside every one of ``probes``' tasks
    (a chunk too long on its own is cut, and its window says so)."""
    chunks, cut = _cut_to_fit(ctx, _fits(ctx, probes))
    return [Window([(rank, text)], [rank] if rank in cut else []) for rank, text in chunks]


def context_windows(ctx: SampleContext, probe: JudgeRequest) -> list[Window]:
    """Pack the ranked chunks into as few windows as fit beside ``probe``'s task (usually one).

    A context longer than the judge's window is not an error: the caller judges each window and
    combines (a claim is supported if any window supports it; each chunk is judged in its window).
    Whether a window fits is decided by counting the tokens of its packed block, exactly as it will
    be sent; a chunk too large for a window on its own is cut to the longest prefix that fits.
    """
    fits = _fits(ctx, [probe])
    chunks = list(enumerate(ctx.sample.contexts, 1))
    if fits(chunks):
        return [Window(chunks, [])]
    chunks, cut = _cut_to_fit(ctx, fits)
    windows: list[Window] = []
    current: list[tuple[int, str]] = []
    for chunk in chunks:
        if current and not fits(current + [chunk]):
            windows.append(Window(current, [r for r, _ in current if r in cut]))
            current = []
        current.append(chunk)
    windows.append(Window(current, [r for r, _ in current if r in cut]))
    return windows


def any_window(a: Verdict, b: Verdict) -> Verdict:
    """Two windows' verdicts on one item: yes if either says yes; its P(yes) the higher (unknown if either
    window gave none)."""
    return Verdict(a.yes or b.yes, None if a.p_yes is None or b.p_yes is None else max(a.p_yes, b.p_yes))


def ask_over_context(ctx: SampleContext, task: YesNoTask) -> tuple[list[Verdict], list[int]]:
    """Ask a yes/no task after the sample's retrieved context: one call per context window (usually one),
    an item yes if any window says yes. Returns the verdicts and the ranks of chunks cut to fit."""
    combined: list[Verdict] | None = None
    truncated: list[int] = []
    for window in context_windows(ctx, ctx.request(task)):
        verdicts = ctx.ask(task, window.block(ctx.lang))
        combined = verdicts if combined is None else [any_window(a, b) for a, b in zip(combined, verdicts, strict=True)]
        truncated += window.truncated
    return combined or [], truncated
