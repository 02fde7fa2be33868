"""One TLS client context per CA setting, shared by every HTTP client agentport opens.

Building a context reads the CA bundle: about 0.4 s of blocking work, done in the event loop,
which stalled every concurrent call when each call's client built its own (measured on the
`openai_compat` backend: a research run went from 10.6 s to 1.35 s). The cache is keyed on
`SSL_CERT_FILE` / `SSL_CERT_DIR` (which httpx honours), so changing them still takes effect.
"""

from __future__ import annotations

import functools
import os
import ssl

__all__ = ["tls_context"]


def tls_context() -> ssl.SSLContext:
    """The shared client context for the current `SSL_CERT_FILE` / `SSL_CERT_DIR`."""
    return _context(os.environ.get("SSL_CERT_FILE"), os.environ.get("SSL_CERT_DIR"))


@functools.cache
def _context(cert_file: str | None, cert_dir: str | None) -> ssl.SSLContext:
    import httpx  # on first use: httpx loads click and rich when they are installed

    return httpx.create_ssl_context()
