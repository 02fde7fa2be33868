"""The embedded backend's loaded models: one `llama_cpp.Llama` per file and settings, shared by
the whole process, each behind a lock; closed at interpreter exit (see `_close_models`)."""

from __future__ import annotations

import atexit
import contextlib
import ctypes
import logging
import threading
import time
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import llama_cpp

from ..core import ErrorKind, ProviderError

if TYPE_CHECKING:
    from .local import LocalOptions


_LLAMA_LOG = logging.getLogger("agentport.local.llama_cpp")


def _llama_log(level: int, text: bytes, user_data: Any, _log: Any = _LLAMA_LOG) -> None:
    # llama.cpp's own log lines (even with verbose=False it prints errors and some notices
    # to stderr) go to the `agentport.local.llama_cpp` logger, never to the terminal. Bound
    # early and never raising: llama.cpp may log while the interpreter is shutting down.
    with contextlib.suppress(BaseException):
        _log.debug("%s", text.decode("utf-8", "replace").rstrip())


# C keeps this pointer for the life of the process, so the callback must outlive every module
# teardown: it is made immortal (a freed ctypes trampoline called from C is a segfault).
_LLAMA_LOG_CALLBACK = llama_cpp.llama_log_callback(_llama_log)
ctypes.pythonapi.Py_IncRef(ctypes.py_object(_LLAMA_LOG_CALLBACK))
llama_cpp.llama_log_set(_LLAMA_LOG_CALLBACK, ctypes.c_void_p(0))


# ---- one model per process ------------------------------------------------------------------


@dataclass
class _Model:
    llama: Any  # llama_cpp.Llama (untyped)
    lock: threading.Lock
    path: Path
    chat_format: str | None
    plain: bool  # complete a Question/Answer transcript instead of applying a chat template
    load_s: float


_MODELS: dict[tuple[Any, ...], _Model] = {}
_MODELS_LOCK = threading.Lock()
_SHUTDOWN = threading.Event()  # set at interpreter exit: every generation stops at its next token
_EXIT_WAIT_S = 30.0


@atexit.register
def _close_models() -> None:
    """Free every loaded model before the interpreter tears itself down.

    Left to the garbage collector, `Llama.__del__` runs during finalisation while an abandoned
    worker thread (a cancelled call, `abandon_on_cancel`) may still be inside llama.cpp, and
    frees the context under it: a segfault at exit (seen at the end of a pytest session). So:
    stop every generation, wait for each model's lock, close it. A model whose call does not
    give the lock back in time is leaked on purpose (never freed while in use).
    """
    _SHUTDOWN.set()
    with _MODELS_LOCK:
        models = list(_MODELS.values())
        _MODELS.clear()
    for model in models:
        if model.lock.acquire(timeout=_EXIT_WAIT_S):
            with contextlib.suppress(Exception):  # exit path: never raise from atexit
                model.llama.close()
        else:
            ctypes.pythonapi.Py_IncRef(ctypes.py_object(model.llama))


def _load(path: Path, options: LocalOptions) -> _Model:
    chat_format = options.chat_format
    key = (str(path), options.n_ctx, options.n_threads, options.n_batch, options.seed, chat_format)
    with _MODELS_LOCK:
        model = _MODELS.get(key)
        if model is not None:
            return model
        kwargs: dict[str, Any] = {
            "model_path": str(path),
            "n_ctx": options.n_ctx,
            "n_batch": options.n_batch,
            "verbose": False,
            "chat_format": chat_format,
        }
        if options.n_threads is not None:
            kwargs["n_threads"] = options.n_threads
        if options.seed is not None:
            kwargs["seed"] = options.seed
        started = time.monotonic()
        try:
            llama = llama_cpp.Llama(**kwargs)
        except (ValueError, RuntimeError, OSError) as exc:
            raise ProviderError(
                ErrorKind.config, f"cannot load GGUF model {path}: {exc}", backend="local"
            ) from None
        has_template = any("chat_template" in k for k in (llama.metadata or {}))
        plain = options.prompt_style == "plain" or (
            options.prompt_style == "auto" and not has_template and chat_format is None
        )
        model = _Model(
            llama, threading.Lock(), path, llama.chat_format, plain, time.monotonic() - started
        )
        _MODELS[key] = model
        return model
