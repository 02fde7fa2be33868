"""agentport.web: search providers and a guarded fetcher for backends without web tools.

Internal to agentport, with no stability promise (the public modules: docs/architecture.md,
"Public API"): `__all__` is what the other layers of agentport use.

- `SearchProvider` (protocol), `SearxngProvider` (a SearxNG instance's JSON API),
  `provider_from_settings(WebSettings)`; failures raise `SearchError`.
- `Fetcher`: httpx fetching with robots.txt, per-host concurrency and delay, size, time and
  content-type limits, bounded and re-checked redirects, no credentials in URLs, no private
  addresses unless allowed, each connection going only to the addresses checked (no DNS
  rebinding), an optional explicit proxy; HTML to text by trafilatura (the `web` extra).
  `fetch(url)` returns `FetchedPage` or `FetchRefused(url, kind, reason)`, never raises for
  those.
- `WebSettings`: the `[web]` configuration table.

Layer: beside `agentport.transport` (no backend or workflow imports). See docs/web.md.
"""

from __future__ import annotations

from ._fetch import Fetcher, html_to_text
from ._guard import check_url, is_public_address
from ._search import SearchProvider, SearxngProvider, provider_from_settings
from ._settings import DEFAULT_USER_AGENT, WebSettings, narrow_web, without_secrets
from ._types import FetchedPage, FetchRefused, FetchResult, RefusalKind, SearchError, SearchHit

__all__ = [
    "FetchRefused",
    "FetchResult",
    "FetchedPage",
    "Fetcher",
    "SearchError",
    "SearchHit",
    "SearchProvider",
    "WebSettings",
    "narrow_web",
    "provider_from_settings",
    "without_secrets",
]
