"""Greedy decoding under a grammar, with the grammar applied lazily, and the probability of each verdict.

Lazy grammar. Masking the whole vocabulary (151k tokens for Qwen) with the grammar at every step was
the largest cost of a judge call after the model itself. Greedy decoding only needs the best token the
grammar allows, so: take the unconstrained best token and ask the grammar about that one token; only
when the grammar rejects it, mask the vocabulary and take the best allowed token. The argmax over all
tokens, when allowed, is the argmax over the allowed tokens: the same tokens come out as with full
masking (llama.cpp's own ``common_sampler`` does the same), which a test checks byte for byte.

Verdict probabilities. For every enum field of the schema (``"claim_3": "yes"|"no"``), the
distribution is read at the step where the model decides: the first step inside that field's value
whose chosen token belongs to exactly one option (``"y``, ``yes``, ``"no"``...). There, the
probability of an option is the softmax mass of the tokens consistent with it, renormalised over the
options: the distribution the grammar leaves the model. Reading it inside the JSON at the decision
token, rather than after free text, is where it is informative.

Drafted fixed text. In a choices-only output (every verdict task: ``choice_fields``) each field has
one free decision; the rest is the schema's fixed text and the judge's own spacing. Decoding it one
token per forward pass spent about nine passes a verdict. So once a decision is taken, the text that
must follow up to the next decision is drafted (``ChoiceDraft``: the option's rest, the next key, with
the separators the judge itself wrote earlier in the same output) and evaluated in one batch with the
decided token, and each drafted token is kept only while it is the token greedy decoding would pick:
the draft saves forward passes and never chooses a token. A draft depends only on the call's own
output so far, so every call is still computed by the same steps whatever came before. Opt-in
(``JudgeOptions.draft``): a batch's logits round differently from one-at-a-time ones, so near-ties can
go the other way, and on a 2-core CPU a small batch costs nearly as much as its tokens one by one.
(Writing the fixed text in one fixed layout instead was tried: the judge writes chunk verdicts
compactly, and the imposed layout lowered HotpotQA dev AUC from 0.844 to 0.723.)
"""

from __future__ import annotations

import ctypes
import json
import re
from dataclasses import dataclass, field
from typing import Any

import numpy as np


@dataclass
class Generation:
    text: str
    finish: str  # "stop" | "length"
    tokens: list[int]
    probabilities: dict[str, dict[str, float]] = field(default_factory=dict)
    full_masks: int = 0  # steps where the grammar rejected the greedy token and the vocabulary was masked
    passes: int = 0  # forward passes (batches) the output cost


def enum_fields(schema: dict[str, Any]) -> dict[str, tuple[str, ...]]:
    """Top-level properties whose value is one of a fixed set of strings."""
    out = {}
    for key, prop in (schema.get("properties") or {}).items():
        options = prop.get("enum") if isinstance(prop, dict) else None
        if options and all(isinstance(o, str) for o in options):
            out[key] = tuple(options)
    return out


def choice_fields(schema: dict[str, Any]) -> dict[str, tuple[str, ...]] | None:
    """The fields, in output order, of a schema whose output is fixed text but for one enum choice per
    field; None for any other schema.

    Every property required, in order, nothing else allowed, each an enum of plain strings whose first
    characters differ (so the first token of a value names its option).
    """
    fields = enum_fields(schema)
    in_order = list(schema.get("required") or []) == list(schema.get("properties") or {}) == list(fields)
    if schema.get("type") != "object" or schema.get("additionalProperties") is not False or not in_order:
        return None
    for options in fields.values():
        plain = all(o and json.dumps(o) == f'"{o}"' for o in options)
        if not plain or len({o[0] for o in options}) != len(options):
            return None
    return fields


class ChoiceDraft:
    """The fixed text a choices-only output must write next, in the judge's own layout.

    The spacing is the one free thing in that text: after the first key it is the judge's own (what it
    wrote between ``"claim_1"`` and its value; between two fields, what it wrote after the previous
    value), and before it is known a guess (spaced after ``{ ``, compact after ``{``). A wrong guess
    costs only the batch it was evaluated in.
    """

    def __init__(self, fields: dict[str, tuple[str, ...]]):
        self._keys = list(fields)
        self._options = list(fields.values())
        self._openings = [re.compile(r'"' + re.escape(key) + r'"(\s*:\s*)"') for key in self._keys]

    def propose(self, text: str) -> str:
        """The text that must follow ``text`` up to the next decision (or the end); "" when unknown."""
        start = re.match(r"\{(\s*)", text)
        if not start:
            return ""
        opened: list[re.Match[str]] = []  # the fields whose value has begun, in order
        for pattern in self._openings:
            match = pattern.search(text, opened[-1].end() if opened else 0)
            if not match:
                break
            opened.append(match)
        if not opened:
            spacing = start.group(1)
            target = "{" + spacing + f'"{self._keys[0]}"' + (": " if spacing else ":") + '"'
            return target[len(text):] if target.startswith(text) else ""
        i, value = len(opened) - 1, text[opened[-1].end():]
        decided = [o + '"' for o in self._options[i]
                   if value and ((o + '"').startswith(value) or value.startswith(o + '"'))]
        if not decided:
            return ""
        if i + 1 == len(self._keys):
            target = decided[0] + "}"
        else:
            if i == 0:
                between = "," + start.group(1)
            else:
                previous_end = text.index('"', opened[i - 1].end()) + 1
                between = text[previous_end:opened[i].start()]
            target = decided[0] + between + f'"{self._keys[i + 1]}"' + opened[0].group(1) + '"'
        return target[len(value):] if target.startswith(value) else ""


class ChoiceReader:
    """Finds the decision step of each enum field and reads its options' probabilities there."""

    def __init__(self, pieces: list[str], fields: dict[str, tuple[str, ...]]):
        self._pieces = pieces
        self._fields = fields
        self._opening = {key: re.compile(r'"' + re.escape(key) + r'"\s*:\s*("?)$') for key in fields}
        self._sets: dict[tuple[tuple[str, ...], bool], list[np.ndarray]] = {}

    def _token_sets(self, options: tuple[str, ...], quoted: bool) -> list[np.ndarray]:
        """For each option, the tokens that can start its value and no other option's."""
        key = (options, quoted)
        if key not in self._sets:
            targets = [(o + '"') if quoted else ('"' + o + '"') for o in options]
            members: list[list[int]] = [[] for _ in options]
            for token, piece in enumerate(self._pieces):
                if not piece:
                    continue
                fits = [i for i, t in enumerate(targets) if t.startswith(piece) or piece.startswith(t)]
                if len(fits) == 1:
                    members[fits[0]].append(token)
            self._sets[key] = [np.asarray(m, dtype=np.int64) for m in members]
        return self._sets[key]

    def read(self, text: str, token: int, logits: np.ndarray, found: dict[str, dict[str, float]]) -> None:
        """If ``token`` (chosen after ``text``) decides an enum field, record that field's distribution."""
        for key, pattern in self._opening.items():
            if key in found:
                continue
            match = pattern.search(text)
            if not match:
                continue
            options = self._fields[key]
            sets = self._token_sets(options, quoted=bool(match.group(1)))
            if not any(token in s for s in sets if s.size):
                return  # an ambiguous token (the opening quote alone): the decision comes next step
            found[key] = self.distribution(options, quoted=bool(match.group(1)), logits=logits)
            return

    def distribution(self, options: tuple[str, ...], *, quoted: bool, logits: np.ndarray) -> dict[str, float]:
        """The options' probabilities at a decision step: each option's softmax mass, renormalised over
        the options."""
        sets = self._token_sets(options, quoted)
        pooled = np.concatenate([logits[s] for s in sets if s.size]).astype(np.float64)
        top = pooled.max()
        mass = [float(np.exp(logits[s].astype(np.float64) - top).sum()) if s.size else 0.0 for s in sets]
        total = sum(mass)
        return {o: round(m / total, 6) for o, m in zip(options, mass)}


class GrammarDecoder:
    """Greedy, grammar-constrained decoding over a llama-cpp-python ``Llama`` whose prompt is evaluated."""

    def __init__(self, llm: Any, lazy: bool = True):
        import llama_cpp
        from llama_cpp._internals import LlamaTokenDataArray

        self._llm = llm
        self._lib = llama_cpp
        self.lazy = lazy
        self._vocab = llama_cpp.llama_model_get_vocab(llm._model.model)
        self.n_vocab = llm.n_vocab()
        self._candidates = LlamaTokenDataArray(n_vocab=self.n_vocab)
        self._one = (llama_cpp.llama_token_data * 1)()
        self._one_array = llama_cpp.llama_token_data_array(data=self._one, size=1, selected=-1, sorted=False)
        self._samplers: dict[str, Any] = {}
        self._pieces: list[str] | None = None
        self._readers: dict[str, ChoiceReader] = {}

    def close(self) -> None:
        for sampler in self._samplers.values():
            self._lib.llama_sampler_free(sampler)
        self._samplers.clear()

    def _sampler(self, grammar: Any) -> Any:
        key = grammar._grammar
        if key not in self._samplers:
            sampler = self._lib.llama_sampler_init_grammar(self._vocab, grammar._grammar.encode("utf-8"),
                                                           grammar._root.encode("utf-8"))
            if not sampler:
                raise ValueError("llama.cpp rejected the grammar built from the schema")
            self._samplers[key] = sampler
        sampler = self._samplers[key]
        self._lib.llama_sampler_reset(sampler)
        return sampler

    def _piece_texts(self) -> list[str]:
        if self._pieces is None:
            buf = ctypes.create_string_buffer(256)
            pieces = []
            for token in range(self.n_vocab):
                n = self._lib.llama_token_to_piece(self._vocab, token, buf, len(buf), 0, False)
                try:
                    pieces.append(buf.raw[:n].decode("utf-8") if n > 0 else "")
                except UnicodeDecodeError:
                    pieces.append("")  # part of a multi-byte character: never the start of an ASCII option
            self._pieces = pieces
        return self._pieces

    def _reader(self, schema_json: str, schema: dict[str, Any]) -> ChoiceReader | None:
        if schema_json not in self._readers:
            fields = enum_fields(schema)
            self._readers[schema_json] = ChoiceReader(self._piece_texts(), fields) if fields else None
        return self._readers[schema_json]

    def _allows(self, sampler: Any, token: int, logit: float) -> bool:
        self._one[0].id = token
        self._one[0].logit = logit
        self._one[0].p = 0.0
        self._one_array.size = 1
        self._one_array.selected = -1
        self._lib.llama_sampler_apply(sampler, ctypes.byref(self._one_array))
        return bool(np.isfinite(self._one[0].logit))

    def _best_allowed(self, sampler: Any, logits: np.ndarray) -> int:
        self._candidates.copy_logits(logits)
        self._lib.llama_sampler_apply(sampler, ctypes.byref(self._candidates.candidates))
        return int(np.argmax(self._candidates.candidates_data.logit))

    def _evaluate(self, tokens: list[int]) -> list[np.ndarray]:
        """Evaluate ``tokens`` after the current state in one batch; the logits after each of them.

        ``Llama.eval`` keeps only the last position's logits; a draft is verified at every position.
        Whatever lies beyond ``n_tokens`` (a rejected draft's tail) is dropped from the KV cache first.
        """
        llm, lib = self._llm, self._lib
        n_past = llm.n_tokens
        llm._ctx.kv_cache_seq_rm(-1, n_past, -1)
        llm._batch.set_batch(batch=tokens, n_past=n_past, logits_all=True)
        llm._ctx.decode(llm._batch)
        llm.input_ids[n_past : n_past + len(tokens)] = tokens
        llm.n_tokens = n_past + len(tokens)
        return [np.ctypeslib.as_array(lib.llama_get_logits_ith(llm._ctx.ctx, i), shape=(self.n_vocab,))
                for i in range(len(tokens))]

    def _choose(self, sampler: Any, logits: np.ndarray, out: Generation) -> int:
        """Greedy decoding's token: the best one, masked by the grammar only if it rejects that one."""
        token = int(np.argmax(logits))
        if not (self.lazy and self._allows(sampler, token, float(logits[token]))):
            out.full_masks += int(self.lazy)
            token = self._best_allowed(sampler, logits)
        return token

    def generate(self, grammar: Any, schema_json: str, schema: dict[str, Any], max_tokens: int, *,
                 draft: bool = False) -> Generation:
        """Decode after the prompt already evaluated in the context; the next token is sampled first.

        With drafting on, each accepted token is evaluated in one batch with the fixed text proposed to
        follow it (``ChoiceDraft``), and every drafted token is kept only while it is the token greedy
        decoding picks from the logits before it; at the first that is not, the rest is dropped and
        decoding goes on from the picked token. The draft decides how many tokens are evaluated at once,
        never which tokens come out.
        """
        lib = self._lib
        sampler = self._sampler(grammar)
        reader = self._reader(schema_json, schema)
        fields = choice_fields(schema) if draft else None
        draft_of = ChoiceDraft(fields) if fields else None
        pieces = self._piece_texts() if reader or draft_of else None
        out = Generation("", "length", [])
        text = ""
        logits = np.ctypeslib.as_array(lib.llama_get_logits_ith(self._llm._ctx.ctx, -1), shape=(self.n_vocab,))
        drafted: list[int] = []  # evaluated after the last kept token, not yet checked
        rows: list[np.ndarray] = []  # the logits after each drafted token
        while len(out.tokens) < max_tokens:
            token = self._choose(sampler, logits, out)
            checked = drafted.pop(0) if drafted else None
            if checked is not None and token != checked:
                self._llm.n_tokens -= len(drafted) + 1  # the draft goes wrong here: drop it
                drafted, rows = [], []
            if lib.llama_vocab_is_eog(self._vocab, token):
                out.finish = "stop"
                break
            if reader is not None:
                reader.read(text, token, logits, out.probabilities)
            if pieces is not None:
                text += pieces[token]
            lib.llama_sampler_accept(sampler, token)
            out.tokens.append(token)
            if checked is not None and token == checked:
                logits = rows.pop(0)  # already evaluated with the draft
                continue
            budget = min(max_tokens - len(out.tokens), self._llm.n_batch - 1)
            drafted = self._tokenize(draft_of.propose(text))[:budget] if draft_of and budget > 0 else []
            logits, *rows = self._evaluate([token, *drafted])
            out.passes += 1
        out.text = self._llm.detokenize(out.tokens).decode("utf-8", errors="ignore")
        return out

    def _tokenize(self, text: str) -> list[int]:
        return self._llm.tokenize(text.encode("utf-8"), add_bos=False, special=False) if text else []
