"""URL checks made before every request (and again on every redirect hop, robots.txt hops
included): scheme, embedded credentials, and the addresses the host resolves to.

A URL is refused when ANY address of its host is private, loopback, link-local, multicast,
reserved or unspecified (`ipaddress` properties; IPv4-mapped IPv6 is unwrapped), unless the
caller allows private addresses: fetched URLs come from search results and web pages, so
without this check a page could make agentport read the user's router, cloud metadata
service (169.254.169.254) or local services (server-side request forgery).

The URL is parsed by httpx, the client that sends the request, so the host checked is the host
connected to (IDNA 2008 for international names, which Python's own `idna` codec is not).
Numeric hosts in every form the C library accepts (`127.1`, `0x7f.1`, `2130706433`,
`[::ffff:127.0.0.1]`) are read as addresses without asking DNS, and `localhost` names
(RFC 6761 section 6.3) are refused without asking DNS. `resolve_url` returns the checked
addresses as a `Target`; `agentport.web.Fetcher` connects to exactly those addresses (see
`_fetch`), so a DNS server that answers differently the second time (DNS rebinding) cannot
redirect the connection."""

from __future__ import annotations

import ipaddress
import re
import socket
from dataclasses import dataclass

import anyio
import httpx

from ._types import FetchRefused

__all__ = ["Target", "check_url", "is_public_address", "literal_address", "resolve_url"]

_NUMERIC_V4 = re.compile(r"[0-9a-fA-FxX.]+")
_DEFAULT_PORTS = {"http": 80, "https": 443}
IPAddress = ipaddress.IPv4Address | ipaddress.IPv6Address


@dataclass(frozen=True, slots=True)
class Target:
    """A URL that passed the checks: `host` and `port` as the HTTP client connects to them
    (lower case, IDNA-encoded, IPv6 without brackets) and the `addresses` (IP text, in the
    resolver's order) the host resolved to, every one of them checked."""

    url: str
    host: str
    port: int
    addresses: tuple[str, ...]


def is_public_address(address: str) -> bool:
    """True when *address* (IPv4 or IPv6 text) is a global unicast address."""
    ip = ipaddress.ip_address(address.split("%", 1)[0])
    return _is_public(ip)


# IPv6 ranges Python's `ipaddress` (3.11) calls global but that reach a private network or
# embed an IPv4 address that decides: RFC 3879 site-local (deprecated, still routed inside
# sites), RFC 4291 2.5.5.1 IPv4-compatible (deprecated), RFC 8215 local-use NAT64, and the
# RFC 6052 well-known NAT64 prefix, RFC 3056 6to4 and RFC 4380 Teredo, which carry an IPv4
# address (checked as that address; Teredo's is obfuscated, so Teredo is refused whole).
_SITE_LOCAL = ipaddress.IPv6Network("fec0::/10")
_V4_COMPATIBLE = ipaddress.IPv6Network("::/96")
_NAT64 = ipaddress.IPv6Network("64:ff9b::/96")
_NAT64_LOCAL = ipaddress.IPv6Network("64:ff9b:1::/48")
_TEREDO = ipaddress.IPv6Network("2001::/32")


def _embedded(ip: ipaddress.IPv6Address) -> ipaddress.IPv4Address | None:
    """The IPv4 address an IPv6 one stands for (mapped, NAT64, 6to4), or None."""
    if ip.ipv4_mapped is not None:
        return ip.ipv4_mapped
    if ip in _NAT64:
        return ipaddress.IPv4Address(int(ip) & 0xFFFFFFFF)
    return ip.sixtofour


def _is_public(ip: IPAddress) -> bool:
    if isinstance(ip, ipaddress.IPv6Address):
        if any(ip in net for net in (_SITE_LOCAL, _V4_COMPATIBLE, _NAT64_LOCAL, _TEREDO)):
            return False
        embedded = _embedded(ip)
        if embedded is not None:
            ip = embedded
    return not (
        ip.is_private
        or ip.is_loopback
        or ip.is_link_local
        or ip.is_multicast
        or ip.is_reserved
        or ip.is_unspecified
        or not ip.is_global
    )


def literal_address(host: str) -> IPAddress | None:
    """The address a numeric *host* names, or None for a DNS name. Pure (no I/O).

    IPv6 text (a zone `%25eth0` / `%eth0` is dropped) and every IPv4 spelling `inet_aton(3)`
    accepts: dotted decimal, fewer parts (`127.1`), hexadecimal and octal parts (`0x7f.1`,
    `0177.0.0.1`) and a single 32-bit number (`2130706433`) - the resolver and browsers read
    these as addresses, so the check must too."""
    text = host.strip("[]")
    if ":" in text:
        try:
            return ipaddress.IPv6Address(text.replace("%25", "%", 1).split("%", 1)[0])
        except ValueError:
            return None
    if not _NUMERIC_V4.fullmatch(text) or not text[:1].isdigit():
        return None
    try:
        return ipaddress.IPv4Address(socket.inet_aton(text))
    except OSError:
        return None


def _is_localhost(host: str) -> bool:
    name = host.rstrip(".").lower()
    return name == "localhost" or name.endswith(".localhost")


def _static_check(url: str) -> tuple[str, int] | FetchRefused:
    """(host, port) as httpx connects to them, or the refusal (scheme, credentials)."""
    try:
        parsed = httpx.URL(url)
        port = parsed.port
    except (httpx.InvalidURL, ValueError, TypeError) as exc:
        return FetchRefused(url, "scheme", f"malformed URL ({exc})")
    if parsed.scheme not in _DEFAULT_PORTS or not parsed.raw_host:
        return FetchRefused(url, "scheme", "only http:// and https:// URLs are fetched")
    if parsed.userinfo:
        return FetchRefused(url, "credentials", "URLs with embedded credentials are refused")
    if port is not None and not 0 < port < 65536:
        return FetchRefused(url, "scheme", f"malformed URL (port {port} out of range)")
    return parsed.raw_host.decode("ascii"), port or _DEFAULT_PORTS[parsed.scheme]


async def _resolve(host: str, port: int) -> list[str]:
    """The addresses *host* resolves to, in the resolver's order, duplicates dropped.
    Raises OSError. (Tests replace this function to play a rebinding DNS server.)"""
    infos = await anyio.getaddrinfo(host, port, type=socket.SOCK_STREAM)
    return list(dict.fromkeys(str(info[4][0]) for info in infos))


def _private(url: str, host: str, address: str) -> FetchRefused:
    return FetchRefused(
        url,
        "private_address",
        f"{host!r} resolves to non-public address {address} "
        "(set [web] allow_private = true to fetch it)",
    )


async def resolve_url(url: str, *, allow_private: bool) -> Target | FetchRefused:
    """Check *url* and resolve its host once: the `Target` to connect to, or the refusal
    (`scheme`, `credentials`, `dns`, or `private_address` when any address is not public and
    *allow_private* is off). With *allow_private* the addresses are resolved but not judged."""
    checked = _static_check(url)
    if isinstance(checked, FetchRefused):
        return checked
    host, port = checked
    literal = literal_address(host)
    if literal is not None:
        if not allow_private and not _is_public(literal):
            return _private(url, host, str(literal))
        return Target(url, host, port, (str(literal),))
    if not allow_private and _is_localhost(host):
        return FetchRefused(
            url,
            "private_address",
            f"{host!r} is a localhost name (RFC 6761) (set [web] allow_private = true to fetch it)",
        )
    try:
        addresses = await _resolve(host, port)
    except OSError as exc:
        return FetchRefused(url, "dns", f"cannot resolve {host!r} ({exc.strerror or exc})")
    if not addresses:
        return FetchRefused(url, "dns", f"{host!r} resolves to no address")
    if not allow_private:
        for address in addresses:
            if not is_public_address(address):
                return _private(url, host, address)
    return Target(url, host, port, tuple(addresses))


async def check_url(url: str, *, allow_private: bool) -> FetchRefused | None:
    """None when *url* may be requested, else the refusal (see `resolve_url`). The answer
    holds for this resolution only: to connect, use `resolve_url`'s addresses."""
    target = await resolve_url(url, allow_private=allow_private)
    return target if isinstance(target, FetchRefused) else None
