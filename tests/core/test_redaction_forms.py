"""`redact` masks every credential form a provider, a CLI or a config file prints, and leaves
ordinary words alone: "Missing bearer or basic authentication in header" stays as written."""

from __future__ import annotations

import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st

from agentport.core import redact

# (form, the secret part that must not survive)
FORMS: dict[str, tuple[str, str]] = {
    "aws credentials file secret": (
        "aws_secret_access_key = wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY",
        "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY",
    ),
    "aws credentials file session token": (
        "aws_session_token=IQoJb3JpZ2luX2VjEJr//////////wEaCXVzLWVhc3QtMSJHMEUCIQ",
        "IQoJb3JpZ2luX2VjEJr",
    ),
    "aws key id": ("aws_access_key_id = AKIAIOSFODNN7EXAMPLE", "IOSFODNN7EXAMPLE"),
    "x-api-key header": ("x-api-key: 3f9a7c1e2b4d6f80", "3f9a7c1e2b4d6f80"),
    "api_key in a query": (
        "https://api.example.com/v1/chat?api_key=3f9a7c1e2b4d&model=m",
        "3f9a7c1e2b4d",
    ),
    "key in a query": ("https://g.example.com/v1?key=Zq8vN3kLpW2x&alt=sse", "Zq8vN3kLpW2x"),
    "github classic": ("ghp_abcdefghijklmnopqrstuvwxyz0123456789", "abcdefghijklmnopqrst"),
    "github fine-grained": ("github_pat_11ABCDEFG0123456789_abcdefghij", "11ABCDEFG0123456789"),
    "google api key": ("AIzaSyA1234567890abcdefghijklmnopqrstu", "SyA1234567890abcdef"),
    "google oauth": ("ya29.a0AfH6SMBabcdefghijklmnopqrstuvw", "a0AfH6SMBabcdefghij"),
    "anthropic": ("sk-ant-api03-AbC123dEf456GhI789", "AbC123dEf456GhI789"),
    "stripe-style": ("sk_live_51HabcdefGHIJKL", "51HabcdefGHIJKL"),
    "gitlab": ("glpat-abcdefghij0123456789", "abcdefghij0123456789"),
    "groq": ("gsk_abcdefghij0123456789ABCD", "abcdefghij0123456789ABCD"),
    "xai": ("xai-abcdefghij0123456789ABCD", "abcdefghij0123456789ABCD"),
    "npm": ("npm_abcdefghij0123456789ABCDEFGHIJ0123", "abcdefghij0123456789ABCD"),
    "jwt bearer": (
        "Authorization: Bearer eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxIn0.c2lnbmF0dXJl",
        "eyJzdWIiOiIxIn0",
    ),
    "bearer in prose": ("sent Bearer 9fQ2xL7pR4tZ8mK1 to", "9fQ2xL7pR4tZ8mK1"),
    "basic header": ("Authorization: Basic dXNlcjpwYXNzd29yZA==", "dXNlcjpwYXNzd29yZA"),
    "proxy-authorization": ("Proxy-Authorization: Basic YWxhZGRpbjpvcGVu", "YWxhZGRpbjpvcGVu"),
    "json password": ('{"password": "hunter", "user": "bob"}', "hunter"),
    "client secret": ("client_secret=Zq8vN3kLpW2xR7tY", "Zq8vN3kLpW2xR7tY"),
    "env assignment": ("export GITHUB_TOKEN=Zq8vN3kLpW2xR7tY", "Zq8vN3kLpW2xR7tY"),
    "url credentials": ("https://alice:s3cr3t-pass@db.example.com/x", "s3cr3t-pass"),
    "pem private key": (
        "-----BEGIN RSA PRIVATE KEY-----\nMIIEowIBAAKCAQEAuP1bQ7cX\nZ0aX9kQ==\n"
        "-----END RSA PRIVATE KEY-----",
        "MIIEowIBAAKCAQEAuP1bQ7cX",
    ),
    "pem cut by a tail": (
        "Q7cXuP1bMIIEowIBAAKCAQEA\nZ0aX9kQabcdefghij==\n-----END PRIVATE KEY-----",
        "Q7cXuP1bMIIEowIBAAKCAQEA",
    ),
    "pem cut before its end": (
        "-----BEGIN OPENSSH PRIVATE KEY-----\nb3BlbnNzaC1rZXktdjEAAAAA\n",
        "b3BlbnNzaC1rZXktdjEAAAAA",
    ),
}


@pytest.mark.parametrize("name", sorted(FORMS))
def test_every_credential_form_is_masked(name: str) -> None:
    text, secret = FORMS[name]
    out = redact(f"error: {text} (see the docs)")
    assert secret not in out, out
    assert "(see the docs)" in out  # only the credential goes
    assert redact(out) == out


# Ordinary English and HTTP words, the credential words among them used as plain words.
VOCABULARY = (
    "Missing bearer or basic authentication in header the a request was is not valid invalid "
    "expired revoked required please provide your an API api key keys token tokens password "
    "passwords secret secrets credential credentials Bearer Basic Token Key Password Secret "
    "authentication Authentication unauthorized Unauthorized forbidden access denied session "
    "refresh login HTTP GET POST header headers content-type application/json rate limit "
    "exceeded quota billing model not found error status 401 403 429 500 try again later "
    "missing_token invalid_api_key authentication_error x-api-key www-authenticate realm "
    "user username account organization project internal server gateway timeout"
)
WORDS = tuple(VOCABULARY.split())
SEPARATORS = (" ", " ", " ", ", ", ". ", ": ", "; ", "\n", " (", ") ", " - ", '"', "'")


@st.composite
def prose(draw: st.DrawFn) -> str:
    words = draw(st.lists(st.sampled_from(WORDS), min_size=1, max_size=14))
    out = words[0]
    for word in words[1:]:
        out += draw(st.sampled_from(SEPARATORS)) + word
    return out


@settings(max_examples=1000, deadline=None)
@given(prose())
def test_text_without_a_secret_is_never_changed(text: str) -> None:
    # (after `=`, or after an `Authorization:` header's scheme, any value is a credential:
    # those joins are not prose and are not drawn here)
    assert redact(text) == text


def test_codex_missing_authentication_line_reads_as_written() -> None:
    line = "Missing bearer or basic authentication in header"
    assert redact(line) == line
    assert redact(f"unexpected status 401 Unauthorized: {line}") == (
        f"unexpected status 401 Unauthorized: {line}"
    )


SECRET_FORMS = (
    "sk-proj-{}",
    "sk-ant-api03-{}",
    "ghp_{}",
    "github_pat_11{}",
    "AIza{}",
    "hf_{}",
    "xoxb-{}",
    "glpat-{}",
    "Bearer {}",
    "Basic {}==",
    "Authorization: Bearer {}",
    "x-api-key: {}",
    "api_key={}",
    "https://h.example/v1?key={}&alt=sse",
    "aws_secret_access_key = {}",
    "aws_session_token = {}",
    "password={}",
    '"token": "{}"',
    "token: {}",
    "eyJhbGciOiJIUzI1NiJ9.eyJ{}.sig{}",
)
# a real-looking credential: 24+ characters of a key alphabet with a digit in it
credential = st.text(
    alphabet="ABCDEFGHJKLMNPQRSTUVWXYZabcdefghijkmnopqrstuvwxyz23456789", min_size=24, max_size=48
).filter(lambda s: any(c.isdigit() for c in s))


@settings(max_examples=600, deadline=None)
@given(form=st.sampled_from(SECRET_FORMS), token=credential, left=prose(), right=prose())
def test_a_real_looking_credential_is_always_masked(
    form: str, token: str, left: str, right: str
) -> None:
    assume(token not in left + right)
    out = redact(f"{left} {form.format(token, token)} {right}")
    assert token not in out
    assert redact(out) == out
