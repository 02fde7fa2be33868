"""Helpers for the FakeModelServer tests: read SSE streams with httpx."""

from __future__ import annotations

import json
from typing import Any

import httpx


def sse(response: httpx.Response) -> list[tuple[str | None, Any]]:
    """Parse an SSE body into (event name, decoded data) pairs; `[DONE]` stays a string."""
    events: list[tuple[str | None, Any]] = []
    name: str | None = None
    data: list[str] = []
    for line in response.iter_lines():
        if line == "":
            if data:
                text = "\n".join(data)
                events.append((name, text if text == "[DONE]" else json.loads(text)))
            name, data = None, []
        elif line.startswith("event:"):
            name = line[6:].strip()
        elif line.startswith("data:"):
            data.append(line[5:].strip())
    if data:
        text = "\n".join(data)
        events.append((name, text if text == "[DONE]" else json.loads(text)))
    return events


_client: httpx.Client | None = None


def http() -> httpx.Client:
    """One shared client: building an httpx.Client costs tens of milliseconds."""
    global _client
    if _client is None:
        _client = httpx.Client(timeout=10)
    return _client


def post(url: str, body: Any = None, **kw: Any) -> httpx.Response:
    return http().post(url, json=body, **kw)


def stream_post(url: str, body: dict[str, Any], **kw: Any) -> tuple[int, list[Any]]:
    with http().stream("POST", url, json=body, **kw) as r:
        if r.status_code != 200:
            r.read()
            return r.status_code, [r.json()]
        return r.status_code, sse(r)


def chat_body(text: str = "hi", *, stream: bool = False, **extra: Any) -> dict[str, Any]:
    body: dict[str, Any] = {
        "model": "fake-model",
        "messages": [{"role": "system", "content": "be brief"}, {"role": "user", "content": text}],
        **extra,
    }
    if stream:
        body["stream"] = True
        body["stream_options"] = {"include_usage": True}
    return body


def read_raw(url: str, body: dict[str, Any], timeout: float = 10) -> tuple[bytes, Exception | None]:
    """POST and read the raw body until it ends or fails; returns what arrived and the
    transport error (None when the body ended cleanly)."""
    got = b""
    try:
        with http().stream("POST", url, json=body, timeout=timeout) as r:
            for part in r.iter_raw():
                got += part
    except httpx.TransportError as exc:
        return got, exc
    return got, None
