"""The embedded backend's model worker: a child process that owns llama.cpp, so that a native
fault in it (an illegal instruction of a build this CPU cannot run, a corrupt model file, an
out-of-memory kill) ends this process, never the caller's. Run as `python _local_worker.py`
(`_local_client.py` does); never imported by agentport.

Protocol: one JSON object per line on stdin, one answer per request on stdout.

- `{"op": "load", "id": N, "model": {model_path, n_ctx, n_batch, n_threads, seed,
  chat_format, prompt_style}}` -> `{"id": N, "ok": true, "plain": bool, "chat_format": str,
  "load_s": float, "loads": int}`. The model stays loaded (warm) for later requests; a request
  for other settings replaces it.
- `{"op": "generate", "id": N, "plain": bool, "kwargs": {...}, "grammar": GBNF | null,
  "json_schema": JSON text | null, "deadline_s": float}` -> `{"id": N, "ok": true, "text": str,
  "finish": str | null, "tokens": int, "n_tokens": int, "loads": int}`. `kwargs` go to
  `create_completion` (plain) or `create_chat_completion`; the grammar is built here.
- `{"op": "score", "id": N, "prompt": str, "choices": [str, ...], "deadline_s": float}` ->
  `{"id": N, "ok": true, "logprobs": [float, ...], "n_tokens": int, "loads": int}`: the
  log-likelihood of each choice (its tokens after `prompt` and one space, summed) under the
  model, from its token log-probabilities; the prompt is evaluated once (its cached prefix
  reused) and every choice after it.
- `{"op": "cancel", "id": N}`: generation N stops at its next token and answers
  `{"ok": false, "error": "cancelled"}`.

Failures answer `{"id": N, "ok": false, "error": KIND, "message": TEXT}` with KIND one of
`config` (the model does not load), `context_length`, `invalid_request`, `timeout`,
`cancelled`. End of stdin, or the parent's death (its pid changes; polled each second), stops
the generation and exits at once with `os._exit`: no finaliser runs, so exit cannot crash.

Standard library and llama_cpp only: the worker starts without importing agentport.
"""

from __future__ import annotations

import contextlib
import json
import os
import queue
import re
import sys
import threading
import time
from typing import Any

_CONTEXT = re.compile(r"exceed context window|context (?:window|length)", re.IGNORECASE)
_PARENT_POLL_S = 1.0


class _State:
    def __init__(self) -> None:
        self.cancelled: set[Any] = set()  # request ids to stop
        self.gone = threading.Event()  # stdin closed or the parent died
        self.requests: queue.Queue[dict[str, Any] | None] = queue.Queue()
        self.out_lock = threading.Lock()


def _send(state: _State, message: dict[str, Any]) -> None:
    line = json.dumps(message, ensure_ascii=False) + "\n"
    with state.out_lock:
        sys.stdout.write(line)
        sys.stdout.flush()


def _read_stdin(state: _State) -> None:
    for raw in sys.stdin:
        try:
            message = json.loads(raw)
        except ValueError:
            continue
        if not isinstance(message, dict):
            continue
        if message.get("op") == "cancel":
            state.cancelled.add(message.get("id"))
        else:
            state.requests.put(message)
    state.gone.set()
    state.requests.put(None)


def _watch_parent(state: _State, parent: int) -> None:
    while not state.gone.wait(_PARENT_POLL_S):
        if os.getppid() != parent:
            state.gone.set()
            state.requests.put(None)
            return


class _Worker:
    def __init__(self, state: _State) -> None:
        import llama_cpp
        import llama_cpp.llama_grammar

        self.llama_cpp = llama_cpp
        self.state = state
        self.model: Any = None
        self.key: str | None = None
        self.plain = False
        self.load_s = 0.0
        self.loads = 0

    def load(self, spec: dict[str, Any]) -> dict[str, Any]:
        key = json.dumps(spec, sort_keys=True)
        if self.model is None or key != self.key:
            self.model = None
            kwargs: dict[str, Any] = {
                "model_path": spec["model_path"],
                "n_ctx": spec["n_ctx"],
                "n_batch": spec["n_batch"],
                "verbose": False,
                "chat_format": spec.get("chat_format"),
            }
            for name in ("n_threads", "seed"):
                if spec.get(name) is not None:
                    kwargs[name] = spec[name]
            started = time.monotonic()
            try:
                self.model = self.llama_cpp.Llama(**kwargs)
            except (ValueError, RuntimeError, OSError) as exc:
                return _fail("config", f"cannot load GGUF model {spec['model_path']}: {exc}")
            self.load_s = time.monotonic() - started
            self.loads += 1
            self.key = key
            has_template = any("chat_template" in k for k in (self.model.metadata or {}))
            style = spec.get("prompt_style", "auto")
            self.plain = style == "plain" or (
                style == "auto" and not has_template and spec.get("chat_format") is None
            )
        return {
            "ok": True,
            "plain": self.plain,
            "chat_format": self.model.chat_format,
            "load_s": self.load_s,
            "loads": self.loads,
        }

    def generate(self, request: dict[str, Any]) -> dict[str, Any]:
        if self.model is None:
            return _fail("invalid_request", "no model loaded")
        grammar_cls = self.llama_cpp.llama_grammar.LlamaGrammar
        kwargs = dict(request.get("kwargs") or {})
        kwargs["stream"] = True
        deadline = time.monotonic() + float(request.get("deadline_s", 0.0))
        try:
            if request.get("grammar"):
                kwargs["grammar"] = grammar_cls.from_string(request["grammar"], verbose=False)
            elif request.get("json_schema"):
                kwargs["grammar"] = grammar_cls.from_json_schema(
                    request["json_schema"], verbose=False
                )
        except (ValueError, RuntimeError) as exc:
            return _fail("invalid_request", f"grammar: {exc}")
        plain = bool(request.get("plain"))
        parts: list[str] = []
        finish: str | None = None
        tokens = 0
        try:
            if plain:
                stream = self.model.create_completion(**kwargs)
            else:
                stream = self.model.create_chat_completion(**kwargs)
            for chunk in stream:
                choice = chunk["choices"][0]
                text = choice.get("text") if plain else choice.get("delta", {}).get("content")
                if text:
                    parts.append(text)
                    tokens += 1
                finish = choice.get("finish_reason") or finish
                if self.state.gone.is_set() or request.get("id") in self.state.cancelled:
                    stream.close()
                    return _fail("cancelled", "cancelled")
                if time.monotonic() > deadline:
                    stream.close()
                    return _fail("timeout", "the deadline ran out while generating")
        except ValueError as exc:
            kind = "context_length" if _CONTEXT.search(str(exc)) else "invalid_request"
            return _fail(kind, str(exc))
        return {
            "ok": True,
            "text": "".join(parts),
            "finish": finish,
            "tokens": tokens,
            "n_tokens": int(getattr(self.model, "n_tokens", 0) or 0),
            "loads": self.loads,
        }

    def score(self, request: dict[str, Any]) -> dict[str, Any]:
        """The log-likelihood of each choice after the prompt (see the module docstring)."""
        if self.model is None:
            return _fail("invalid_request", "no model loaded")
        import numpy as np

        model = self.model
        prompt = str(request.get("prompt") or "")
        choices = [str(c) for c in request.get("choices") or []]
        deadline = time.monotonic() + float(request.get("deadline_s", 0.0))
        n_vocab = model.n_vocab()
        base = model.tokenize(prompt.encode("utf-8"), add_bos=True, special=True)
        if len(base) + 64 > model.n_ctx():
            return _fail("context_length", "the prompt does not fit the context window")
        out: list[float] = []
        try:
            for choice in choices:
                if self.state.gone.is_set() or request.get("id") in self.state.cancelled:
                    return _fail("cancelled", "cancelled")
                if time.monotonic() > deadline:
                    return _fail("timeout", "the deadline ran out while scoring")
                full = model.tokenize(
                    (prompt + " " + choice).encode("utf-8"), add_bos=True, special=True
                )
                # where the choice's tokens start (a merge at the boundary moves it back)
                k = next(
                    (i for i, (a, b) in enumerate(zip(base, full, strict=False)) if a != b),
                    min(len(base), len(full)),
                )
                k = max(1, min(k, len(full) - 1))
                if len(full) > model.n_ctx():
                    return _fail("context_length", "a choice does not fit the context window")
                self._keep_prefix(full[: k - 1])
                rows = self._decode_all(full[k - 1 :], n_vocab, np)
                targets = full[k:]
                total = 0.0
                for i, token in enumerate(targets):
                    row = rows[i]
                    peak = float(row.max())
                    norm = peak + float(np.log(np.exp(row - peak).sum()))
                    total += float(row[token]) - norm
                out.append(total)
        except (ValueError, RuntimeError) as exc:
            kind = "context_length" if _CONTEXT.search(str(exc)) else "invalid_request"
            return _fail(kind, str(exc))
        return {"ok": True, "logprobs": out, "n_tokens": len(base), "loads": self.loads}

    def _keep_prefix(self, tokens: list[int]) -> None:
        """Leave the model's state at exactly *tokens*, reusing the cached common prefix."""
        model = self.model
        cached = model.input_ids[: model.n_tokens].tolist()
        same = 0
        for a, b in zip(cached, tokens, strict=False):
            if a != b:
                break
            same += 1
        model.n_tokens = same
        model._ctx.kv_cache_seq_rm(-1, same, -1)
        if same < len(tokens):
            model.eval(tokens[same:])

    def _decode_all(self, tokens: list[int], n_vocab: int, np: Any) -> Any:
        """Decode *tokens* after the model's state, with the logits of every position."""
        model = self.model
        rows = []
        for start in range(0, len(tokens), model.n_batch):
            batch = tokens[start : start + model.n_batch]
            n_past = model.n_tokens
            model._batch.set_batch(batch=batch, n_past=n_past, logits_all=True)
            model._ctx.decode(model._batch)
            logits = np.ctypeslib.as_array(model._ctx.get_logits(), shape=(len(batch) * n_vocab,))
            rows.append(logits.reshape(len(batch), n_vocab).copy())
            model.input_ids[n_past : n_past + len(batch)] = batch
            model.n_tokens += len(batch)
        return np.concatenate(rows, axis=0)


def _fail(kind: str, message: str) -> dict[str, Any]:
    return {"ok": False, "error": kind, "message": message}


_LOG_ERROR = 4  # ggml_log_level GGML_LOG_LEVEL_ERROR


def _quiet_llama_log(llama_cpp: Any) -> None:
    # llama.cpp prints load notices to stderr even with verbose=False; the stderr tail is kept
    # for crash reports, so only its errors and Python's faulthandler stacks go there.
    import ctypes

    def _log(level: int, text: bytes, user_data: Any) -> None:
        if level == _LOG_ERROR:
            with contextlib.suppress(Exception):  # a log line must never raise into C
                sys.stderr.write(text.decode("utf-8", "replace"))

    callback = llama_cpp.llama_log_callback(_log)
    ctypes.pythonapi.Py_IncRef(ctypes.py_object(callback))  # C keeps it for the process's life
    llama_cpp.llama_log_set(callback, ctypes.c_void_p(0))


def main() -> None:
    import faulthandler

    faulthandler.enable()  # a native crash prints where it happened to stderr (the tail)
    state = _State()
    parent = os.getppid()
    threading.Thread(target=_read_stdin, args=(state,), daemon=True).start()
    threading.Thread(target=_watch_parent, args=(state, parent), daemon=True).start()
    worker = _Worker(state)
    _quiet_llama_log(worker.llama_cpp)
    _send(state, {"ready": True, "pid": os.getpid()})
    while True:
        request = state.requests.get()
        if request is None or state.gone.is_set():
            break
        op = request.get("op")
        try:
            if op == "load":
                answer = worker.load(request.get("model") or {})
            elif op == "generate":
                answer = worker.generate(request)
            elif op == "score":
                answer = worker.score(request)
            else:
                answer = _fail("invalid_request", f"unknown op {op!r}")
        except Exception as exc:  # a bug or an unexpected llama_cpp error: a value, not a death
            answer = _fail("invalid_request", f"{type(exc).__name__}: {exc}")
        state.cancelled.discard(request.get("id"))
        _send(state, {"id": request.get("id"), **answer})
    sys.stdout.flush()
    os._exit(0)


if __name__ == "__main__":
    main()
