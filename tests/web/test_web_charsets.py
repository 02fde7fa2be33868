"""Pages in legacy charsets are decoded as a browser decodes them: labels by the WHATWG Encoding
Standard (`iso-8859-1`, `latin1`, `ascii` are windows-1252; `gb2312` is GBK; `shift_jis` is
cp932; `x-cp1251`, `koi8` are labels Python does not know), found in a BOM, the HTTP header
or the `<meta>` prescan, in that order. Real pages served by the loopback web server and read
by agentport's own fetcher; the prescan itself against HTML's awkward cases."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

pytest.importorskip("trafilatura", reason="needs the web extra: pip install -e '.[web]'")

from agentport.testing import LoopbackWeb
from agentport.web import FetchedPage, Fetcher, WebSettings
from agentport.web._charset import decode_page, prescan

pytestmark = pytest.mark.anyio
SETTINGS = WebSettings(allow_private=True, per_host_delay_s=0, timeout_s=5)

WESTERN = "Café “crème brûlée” costs 5 € at the naïve façade — a ‘quoted’ œuvre."
RUSSIAN = "Съешь же ещё этих мягких французских булок, да выпей чаю. Привет, мир!"
# (label as the page says it, the codec a browser decodes it with, text, WHATWG name)
LEGACY = [
    ("iso-8859-1", "cp1252", WESTERN, "windows-1252"),
    ("latin1", "cp1252", WESTERN, "windows-1252"),
    ("ascii", "cp1252", WESTERN, "windows-1252"),
    ("Shift_JIS", "cp932", "東京の天気は晴れです。①番の窓口へどうぞ～。", "shift_jis"),
    ("gb2312", "gbk", "朱镕基在北京讲话。这是一个中文网页的测试段落。", "gbk"),
    ("koi8-r", "koi8_r", RUSSIAN, "koi8-r"),
    ("koi8", "koi8_r", RUSSIAN, "koi8-r"),
    ("windows-1251", "cp1251", RUSSIAN, "windows-1251"),
    ("x-cp1251", "cp1251", RUSSIAN, "windows-1251"),
]


def _html(text: str, head: str = "") -> str:
    body = "".join(f"<p>{text} Paragraph {i} of the article body.</p>\n" for i in range(6))
    head = f"<!DOCTYPE html><html><head>{head}<title>Legacy</title></head>"
    return f"{head}<body><article>\n{body}</article></body></html>"


@pytest.fixture(scope="module")
def web() -> Iterator[LoopbackWeb]:
    with LoopbackWeb() as site:
        yield site


async def _fetch(web: LoopbackWeb, path: str, body: bytes, content_type: str) -> FetchedPage:
    web.serve_bytes(path, body, content_type)
    async with Fetcher(SETTINGS) as fetcher:
        page = await fetcher.fetch(web.url(path))
    assert isinstance(page, FetchedPage), page
    return page


@pytest.mark.parametrize(("label", "codec", "text", "name"), LEGACY, ids=[c[0] for c in LEGACY])
@pytest.mark.parametrize("where", ["header", "meta-charset", "meta-http-equiv"])
async def test_a_legacy_page_is_decoded_by_its_whatwg_label(
    web: LoopbackWeb, label: str, codec: str, text: str, name: str, where: str
) -> None:
    head = {
        "header": "",
        "meta-charset": f'<meta charset="{label}">',
        "meta-http-equiv": f'<meta http-equiv="Content-Type" content="text/html; charset={label}">',
    }[where]
    ctype = f"text/html; charset={label}" if where == "header" else "text/html"
    page = await _fetch(web, f"/legacy/{where}/{label}", _html(text, head).encode(codec), ctype)
    assert text in page.text, page.text[:300]
    assert page.encoding == name


async def test_the_header_wins_over_the_meta_and_a_bom_over_both(web: LoopbackWeb) -> None:
    html = _html(RUSSIAN, '<meta charset="koi8-r">')
    page = await _fetch(web, "/order/header", html.encode("cp1251"), "text/html; charset=cp1251")
    assert (RUSSIAN in page.text, page.encoding) == (True, "windows-1251")
    bom = b"\xef\xbb\xbf" + _html(WESTERN, '<meta charset="windows-1251">').encode("utf-8")
    page = await _fetch(web, "/order/bom", bom, "text/html; charset=iso-8859-1")
    assert (WESTERN in page.text, page.encoding) == (True, "utf-8")
    utf16 = b"\xff\xfe" + _html(RUSSIAN).encode("utf-16-le")
    page = await _fetch(web, "/order/utf16", utf16, "text/html")
    assert (RUSSIAN in page.text, page.encoding) == (True, "utf-16le")


async def test_undeclared_pages_and_labels_the_web_does_not_know(web: LoopbackWeb) -> None:
    page = await _fetch(web, "/plain/utf8", _html(RUSSIAN).encode(), "text/html")
    assert (RUSSIAN in page.text, page.encoding) == (True, "utf-8")
    page = await _fetch(web, "/plain/1252", _html(WESTERN).encode("cp1252"), "text/html")
    assert (WESTERN in page.text, page.encoding) == (True, "windows-1252")
    # `rot13` and `hex` are Python codecs, not web labels: ignored, the bytes decide
    page = await _fetch(web, "/plain/rot13", _html(RUSSIAN).encode(), "text/html; charset=rot13")
    assert (RUSSIAN in page.text, page.encoding) == (True, "utf-8")
    text = "Привет".encode("cp1251")
    page = await _fetch(web, "/plain/text", text * 20, "text/plain; charset=windows-1251")
    assert page.text.startswith("Привет")
    assert page.encoding == "windows-1251"


@pytest.mark.parametrize(
    ("head", "expected"),
    [
        (b'<meta charset="windows-1251">', "windows-1251"),
        (b"<meta charset=koi8-r>", "koi8-r"),
        (b"<META CHARSET='Latin1'/>", "windows-1252"),
        (b'<meta content="text/html; charset=gb2312" http-equiv="content-type">', "gbk"),
        (b'<meta http-equiv="refresh" content="0; charset=koi8-r">', None),  # not content-type
        (b'<meta content="text/html; charset=gb2312">', None),  # no http-equiv
        (b'<!-- <meta charset="koi8-r"> --><meta charset="windows-1251">', "windows-1251"),
        (b"<!-- unterminated <meta charset=koi8-r>", None),
        (b'<div title="<meta charset=koi8-r>"><meta charset=cp1251>', "windows-1251"),
        (b'<meta charset="utf-16le">', "utf-8"),  # a page that carries a <meta> is not UTF-16
        (b'<meta charset="x-user-defined">', "windows-1252"),
        (b'<meta charset="no-such-label"><meta charset="koi8-r">', "koi8-r"),
        (b"<metadata charset=koi8-r>", None),
        (b" " * 1024 + b'<meta charset="koi8-r">', None),  # past the first 1024 bytes
        (b"<", None),
        (b"<meta", None),
    ],
)
def test_the_meta_prescan(head: bytes, expected: str | None) -> None:
    found = prescan(head)
    assert (found.name if found is not None else None) == expected


def test_decode_page_never_raises_on_garbage() -> None:
    for body in (b"\xff" * 100, b"<meta charset=replacement>abc", bytes(range(256)) * 4):
        text, name = decode_page(body, "utf-8", html=True)
        assert isinstance(text, str)
        assert name
