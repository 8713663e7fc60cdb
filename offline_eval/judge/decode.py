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

Choices only. A schema made of nothing but enum fields (every verdict task) has one free decision per
field; every other character is fixed. ``fill_choices`` (opt-in: ``JudgeOptions.fill_choices``) writes
the fixed text itself, in one layout (``{ "claim_1": "yes", "claim_2": "no"}``, the 1.5B judge's own
for claim batches), evaluating each fixed stretch in one batch, as a prompt is, and decides each field
from one read of the logits: the option holding the best token, which is the token greedy decoding
under the grammar would take. A verdict then costs one forward pass per field instead of about nine,
and its probability is read at that same step. Off by default: the judge writes chunk verdicts
compactly, and there the fixed layout lowered agreement (README, "Verdict scoring").
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
            found[key] = self.distribution(options, quoted=bool(match.group(1)), logits=logits)[0]
            return

    def distribution(self, options: tuple[str, ...], *, quoted: bool, logits: np.ndarray
                     ) -> tuple[dict[str, float], str]:
        """The options' probabilities at a decision step (each option's softmax mass, renormalised over
        the options), and the option holding the single best token there: greedy decoding's choice."""
        sets = self._token_sets(options, quoted)
        pooled = np.concatenate([logits[s] for s in sets if s.size]).astype(np.float64)
        top = pooled.max()
        mass = [float(np.exp(logits[s].astype(np.float64) - top).sum()) if s.size else 0.0 for s in sets]
        best = max(range(len(options)), key=lambda i: float(logits[sets[i]].max()) if sets[i].size else -np.inf)
        total = sum(mass)
        return {o: round(m / total, 6) for o, m in zip(options, mass)}, options[best]


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
        self._choice_reader: ChoiceReader | None = None

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

    def generate(self, grammar: Any, schema_json: str, schema: dict[str, Any], max_tokens: int) -> Generation:
        """Decode after the prompt already evaluated in the context; the next token is sampled first."""
        lib, ctx = self._lib, self._llm._ctx.ctx
        sampler = self._sampler(grammar)
        reader = self._reader(schema_json, schema)
        pieces = self._piece_texts() if reader else None
        out = Generation("", "length", [])
        text = ""
        for _ in range(max_tokens):
            logits = np.ctypeslib.as_array(lib.llama_get_logits_ith(ctx, -1), shape=(self.n_vocab,))
            token = int(np.argmax(logits))
            if not (self.lazy and self._allows(sampler, token, float(logits[token]))):
                out.full_masks += int(self.lazy)
                token = self._best_allowed(sampler, logits)
            if lib.llama_vocab_is_eog(self._vocab, token):
                out.finish = "stop"
                break
            if reader is not None:
                reader.read(text, token, logits, out.probabilities)
                text += pieces[token]
            lib.llama_sampler_accept(sampler, token)
            out.tokens.append(token)
            self._llm.eval([token])
        out.text = self._llm.detokenize(out.tokens).decode("utf-8", errors="ignore")
        return out

    def fill_choices(self, fields: dict[str, tuple[str, ...]], max_tokens: int) -> Generation | None:
        """Write a choices-only output (``choice_fields``) after the evaluated prompt: the fixed text in
        batches, one read of the logits per field. None when the output would not fit ``max_tokens``
        (the caller decodes token by token, which ends the same way a cut output always does)."""
        lib, ctx = self._lib, self._llm._ctx.ctx
        if self._choice_reader is None:
            self._choice_reader = ChoiceReader(self._piece_texts(), {})  # keeps each option set's tokens
        reader = self._choice_reader
        out = Generation("", "stop", [])

        def tokenize(text: str) -> list[int]:
            return self._llm.tokenize(text.encode("utf-8"), add_bos=False, special=False)

        # The layout the judges write unprompted; fixed, so every call is decided after the same text.
        fixed = [("{ " if i == 0 else '", ') + f'"{key}": "' for i, key in enumerate(fields)]
        if len(tokenize("".join(fixed) + "".join(max(o, key=len) for o in fields.values()) + '"}')) > max_tokens:
            return None
        pending = ""
        for (key, options), opening in zip(fields.items(), fixed):
            tokens = tokenize(pending + opening)
            self._llm.eval(tokens)
            out.tokens += tokens
            logits = np.ctypeslib.as_array(lib.llama_get_logits_ith(ctx, -1), shape=(self.n_vocab,))
            out.probabilities[key], choice = reader.distribution(options, quoted=True, logits=logits)
            out.text += pending + opening
            pending = choice
        out.tokens += tokenize(pending + '"}')  # the last value and the close: nothing follows, so not evaluated
        out.text += pending + '"}'
        return out
