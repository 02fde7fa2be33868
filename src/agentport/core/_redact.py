"""Secret redaction: the one function every text that leaves agentport goes through.

Two sources of knowledge, applied in this order:

1. literal values: keys registered with `register_secret` (configured API keys) and the
   values of secret-named environment variables (`*KEY*`, `*TOKEN*`, ...), masked as `***`
   wherever they appear;
2. shapes: vendor token prefixes (OpenAI/Anthropic `sk-`, GitHub, AWS, Slack, Google, ...),
   JWTs, PEM private keys, `user:pass@` in URLs, credentials after an HTTP scheme or an
   `Authorization` header, and `name = value` / `name: value` pairs whose name says secret
   (`api_key`, `aws_secret_access_key`, `token`, `password`, ...).

Plain words stay: a credential after `Bearer`/`Basic` or `name:` is masked only when it looks
like one (a digit, a lower-to-upper case change inside, or 24+ characters), so "Missing
bearer or basic authentication in header" and "token: expired" read as written. After `=`,
in a quoted JSON key, or after an `Authorization:` header's scheme, any value is a value.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

__all__ = ["SECRET_NAME", "redact", "redact_value", "register_secret", "secret_values"]

_VALUE = r"[^\s\"',;&}<>]"  # one character of an unquoted value
# a credential-looking run: a digit or a lower->upper change inside, or long enough that it
# is no English word; the lookahead reads only the run (it stops where the run stops)
_LOOKS_SECRET = rf"(?:(?={_VALUE}*\d)|(?={_VALUE}*[a-z][A-Z])|(?={_VALUE}{{24}})){_VALUE}{{8,}}"
# names whose value after `=` is a secret, whatever it looks like (aws_secret_access_key,
# x-api-key, GITHUB_TOKEN, ?key=, client_secret, db_password, ...)
_ASSIGNED = r"[\w.-]{0,64}?(?:key|token|secret|password|passwd|pwd|credentials?|authorization)"
# the same, but a bare `key` only with a prefix (`api_key`, `x-api-key`): "expected key=value"
# is prose; a bare `key=` (`?key=AIza...`) is masked when its value looks like a credential
_NAMED = (
    r"(?:[\w.-]{1,64}?key|[\w.-]{0,64}?(?:token|secret|password|passwd|pwd|credentials?"
    r"|authorization))"
)
# names whose value after `:` is a secret when it looks like one ("token: expired" is prose)
_LABELLED = (
    r"[\w.-]{0,64}?(?:api[_-]?key|access[_-]?key|secret[_-]?key|private[_-]?key|token|secret"
    r"|password|passwd|credentials?)"
)
_SCHEMES = r"bearer|basic|token|digest|negotiate|ntlm|apikey"

# A leading \b keeps ordinary words ("desk-management") intact; the prefixes are those the
# vendors document.
_SHAPES: tuple[tuple[re.Pattern[str], Any], ...] = (
    # PEM private keys, whole or cut before the END line (`_pem_tail`: cut before BEGIN)
    (
        re.compile(
            r"-----BEGIN ([A-Z0-9 ]*)PRIVATE KEY-----(?:[A-Za-z0-9+/=\s*]|[A-Za-z-]+: [^\n]*\n)*"
            r"(?:-----END [A-Z0-9 ]*PRIVATE KEY-----)?"
        ),
        lambda m: (
            f"-----BEGIN {m.group(1)}PRIVATE KEY-----***-----END {m.group(1)}PRIVATE KEY-----"
        ),
    ),
    # OpenAI / Anthropic (sk-ant-) / OpenRouter (sk-or-) and Stripe-style keys
    (re.compile(r"\b(sk|pk|rk)-[A-Za-z0-9_\-]{8,}"), lambda m: f"{m.group(1)}-***"),
    (re.compile(r"\b(sk|pk|rk)_(live|test)_[A-Za-z0-9]{8,}"), lambda m: f"{m.group(1)}_***"),
    (re.compile(r"\bAIza[0-9A-Za-z_\-]{20,}"), "AIza***"),
    (re.compile(r"\bya29\.[0-9A-Za-z_\-]{20,}"), "ya29.***"),  # Google OAuth access token
    (re.compile(r"\b(gh[pousr])_[A-Za-z0-9]{16,}"), lambda m: f"{m.group(1)}_***"),
    (re.compile(r"\bgithub_pat_[A-Za-z0-9_]{16,}"), "github_pat_***"),
    (re.compile(r"\bglpat-[A-Za-z0-9_\-]{16,}"), "glpat-***"),  # GitLab
    (re.compile(r"\bnpm_[A-Za-z0-9]{30,}"), "npm_***"),
    (re.compile(r"\bgsk_[A-Za-z0-9]{20,}"), "gsk_***"),  # Groq
    (re.compile(r"\bxai-[A-Za-z0-9]{20,}"), "xai-***"),
    (re.compile(r"\b(AKIA|ASIA)[0-9A-Z]{16}\b"), lambda m: f"{m.group(1)}***"),
    (re.compile(r"\b(xox[abposr]|xapp)-[A-Za-z0-9\-]{8,}"), lambda m: f"{m.group(1)}-***"),
    (re.compile(r"\bhf_[A-Za-z0-9]{16,}"), "hf_***"),
    (re.compile(r"\beyJ[A-Za-z0-9_\-]{6,}\.[A-Za-z0-9_\-]{6,}\.[A-Za-z0-9_\-]{6,}"), "jwt-***"),
    (re.compile(r"(?i)(://)[^/\s:@]+:[^/\s@]+@"), lambda m: f"{m.group(1)}***:***@"),
    # an Authorization header: whatever follows its scheme is the credential
    (
        re.compile(
            rf"(?i)\b((?:proxy-)?authorization[\"']?\s*[:=]\s*[\"']?(?:{_SCHEMES})\s+)"
            rf"{_VALUE}{{4,}}"
        ),
        lambda m: f"{m.group(1)}***",
    ),
    # a credential after a scheme in prose: only when it looks like one
    (
        re.compile(rf"(?i)\b(bearer|basic)\s+(?-i:{_LOOKS_SECRET})=*"),
        lambda m: f"{m.group(1)} ***",
    ),
    # "password": "...", 'token': '...' (a quoted key is a field name, not prose)
    (
        re.compile(rf"(?i)([\"']{_ASSIGNED}[\"']\s*:\s*[\"'])[^\"'\n]{{4,}}(?=[\"'])"),
        lambda m: f"{m.group(1)}***",
    ),
    # name = value (an assignment, a query parameter, a credentials file)
    (
        re.compile(rf"(?i)(?<![\w.-])({_NAMED}[\"']?[ \t]*=[ \t]*[\"']?){_VALUE}{{4,}}"),
        lambda m: f"{m.group(1)}***",
    ),
    # key = value, when the value looks like a credential
    (
        re.compile(rf"(?i)(?<![\w.-])(key[\"']?[ \t]*=[ \t]*[\"']?)(?-i:{_LOOKS_SECRET})"),
        lambda m: f"{m.group(1)}***",
    ),
    # name: value (a header, a YAML line), when the value looks like a credential
    (
        re.compile(rf"(?i)(?<![\w.-])({_LABELLED}[\"']?[ \t]*:[ \t]*[\"']?)(?-i:{_LOOKS_SECRET})"),
        lambda m: f"{m.group(1)}***",
    ),
)

_PEM_END = re.compile(r"-----END [A-Z0-9 ]*PRIVATE KEY-----")
_BASE64_LINE = re.compile(r"[A-Za-z0-9+/=]{16,80}")
_BASE64_END = re.compile(r"(?<![A-Za-z0-9+/=])[A-Za-z0-9+/=]{16,80}[ \t\r]*\Z")


def _pem_tail(text: str) -> str:
    """The base64 lines before a PEM `END ... PRIVATE KEY` line whose BEGIN a tail cut off,
    masked (walked back line by line: a regex would rescan every line from every start)."""
    if "PRIVATE KEY-----" not in text:
        return text
    out: list[str] = []
    done = 0
    for end in _PEM_END.finditer(text):
        lines = text[done : end.start()].split("\n")
        keep = len(lines) - 1  # lines[-1]: what precedes "-----END" on its own line
        while keep > 0 and _BASE64_LINE.fullmatch(lines[keep - 1].strip(" \t\r")):
            keep -= 1
        if keep < len(lines) - 1 and not lines[-1].strip(" \t"):
            lines[keep:] = ["***"]
            cut = _BASE64_END.search(lines[keep - 1]) if keep else None
            if cut is not None:  # the first line the tail kept began mid-key
                lines[keep - 1] = lines[keep - 1][: cut.start()]
        out.append("\n".join(lines))
        out.append(end.group())
        done = end.end()
    out.append(text[done:])
    return "".join(out)


# Environment variable names whose values are secrets wherever they appear.
SECRET_NAME = re.compile(r"(?i)(KEY|TOKEN|SECRET|PASSWORD|PASSWD|CREDENTIAL|PRIVATE|COOKIE|_PAT\b)")
_MIN_LITERAL = 8  # shorter values ("1", "true", a user name) would mask ordinary text
_registered: set[str] = set()
_literal_cache: tuple[frozenset[str], re.Pattern[str] | None] = (frozenset(), None)
_environ_cache: tuple[dict[Any, Any], frozenset[str]] | None = None


def register_secret(*values: str | None) -> None:
    """Redact these literal values (configured API keys, tokens) from now on, anywhere.
    Values shorter than 8 characters are not registered."""
    _registered.update(v for v in values if isinstance(v, str) and len(v) >= _MIN_LITERAL)


def secret_values(environ: Mapping[str, str]) -> set[str]:
    """Values of *environ* whose names look secret (`*KEY*`, `*TOKEN*`, `*SECRET*`,
    `*PASSWORD*`, ...), at least 8 characters long."""
    return {v for k, v in environ.items() if len(v) >= _MIN_LITERAL and SECRET_NAME.search(k)}


def _environ_secrets() -> frozenset[str]:
    """`secret_values(os.environ)`, scanned again only when the environment changed: CPython
    keeps it encoded in `os.environ._data`, which compares with a copy at C speed (a scan
    decodes every name and value; redaction runs several times per response)."""
    global _environ_cache
    import os  # the environment is read, never written: redaction stays pure otherwise

    data = getattr(os.environ, "_data", None)
    if isinstance(data, dict):
        if _environ_cache is not None and _environ_cache[0] == data:
            return _environ_cache[1]
        values = frozenset(secret_values(os.environ))
        _environ_cache = (dict(data), values)
        return values
    return frozenset(secret_values(os.environ))


def _literals() -> re.Pattern[str] | None:
    global _literal_cache
    current = _environ_secrets() | _registered
    if current != _literal_cache[0]:
        ordered = sorted(current, key=len, reverse=True)  # longest first: no partial masks
        pattern = re.compile("|".join(map(re.escape, ordered))) if ordered else None
        _literal_cache = (current, pattern)
    return _literal_cache[1]


def redact(text: str) -> str:
    """Mask secrets in *text*: registered keys and secret-named environment values
    literally (as `***`), then known token shapes (OpenAI/Anthropic `sk-`, GitHub, GitLab,
    AWS access key ids, Slack, Hugging Face, Google, npm, Groq, xAI, JWTs, PEM private keys,
    `user:pass@` in URLs, `Authorization` headers, credentials after `Bearer`/`Basic`, and
    secret-named `name = value` / `name: value` pairs such as an AWS credentials file's
    `aws_secret_access_key = ...`). Idempotent: `redact(redact(t)) == redact(t)`."""
    literal = _literals()
    out = literal.sub("***", text) if literal is not None else text
    for pattern, replacement in _SHAPES:
        out = pattern.sub(replacement, out)
    return _pem_tail(out)


def redact_value(value: Any, depth: int = 0) -> Any:
    """`redact` applied to every string inside nested dicts, lists and tuples (keys too);
    nesting past 32 levels is replaced by `"..."`."""
    if isinstance(value, str):
        return redact(value)
    if depth >= 32 and isinstance(value, (Mapping, list, tuple)):
        return "..."
    if isinstance(value, Mapping):
        return {
            (redact(k) if isinstance(k, str) else k): redact_value(v, depth + 1)
            for k, v in value.items()
        }
    if isinstance(value, (list, tuple)):
        return type(value)(redact_value(v, depth + 1) for v in value)
    return value
