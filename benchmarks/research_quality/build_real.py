"""Build the real-documentation corpora of the answer-quality benchmark, reproducibly.

    python benchmarks/research_quality/build_real.py            # download, extract, check
    python benchmarks/research_quality/build_real.py --check    # check the built corpora only
    python benchmarks/research_quality/build_real.py --cache DIR --only click

Each corpus is the documentation that ships in one pinned package, in its own markup:

- `python-markdown`: the `docs/` folder of the Python-Markdown 3.7 sdist (PyPI), markdown;
- `click`: the `docs/` folder of the click 8.1.7 sdist (PyPI), Sphinx reStructuredText;
- `coreutils`: the section-1 man pages of Debian bookworm's `coreutils` 9.1-1 package,
  rendered to plain text with `man` (what `man ls | col -b > ls.txt` gives a user).

Downloads go through the ordinary clients (`pip download`, `apt-get download`) into
`<cache>/downloads`, and each file must match the sha256 pinned here. The corpora are
written to `<cache>/corpora/<name>/` (never committed); nothing is fetched when the
benchmark runs. The cache is `--cache`, else `$AGENTPORT_BENCH_CACHE`, else
`$XDG_CACHE_HOME/agentport/research-bench` (`~/.cache/...`).

Planted near-copies: for every `planted` question of `real_questions.toml`, the builder
writes the paragraph of the question's source that holds `plant.find`, with `plant.find`
replaced by `plant.replace`, under the source's heading, into `archive/<source path>` of the
same corpus (one archive page per source file). The report must not state the planted value.

Checks (`check`, run after every build and with `--check`): every answerable question's
gold strings (at least one spelling of each answer) occur in its named source files, and
each source heading occurs in its file; a two-hop question's first source (the bridge)
does not hold every answer by itself; a planted value occurs in its archive page and
nowhere else in the corpus; the strings an unanswerable question lists as `absent` occur
in no document. Exit 1 with one line per failed check.
"""

from __future__ import annotations

import argparse
import gzip
import hashlib
import io
import json
import os
import re
import shutil
import subprocess
import sys
import tarfile
import tomllib
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
QUESTIONS = HERE / "real_questions.toml"
TYPES = ("single", "reverse", "two_hop", "comparison", "planted", "unanswerable")
SUFFIXES = (".md", ".markdown", ".txt", ".rst", ".html", ".htm")


@dataclass(frozen=True)
class Package:
    """One pinned package whose documentation becomes a corpus."""

    corpus: str
    registry: str  # "pypi" (pip download, sdist) or "debian" (apt-get download)
    name: str
    version: str
    filename: str
    sha256: str
    docs: str  # folder inside the archive (after its top folder for an sdist)
    suffixes: tuple[str, ...]
    markup: str
    licence: str
    licence_file: str  # inside the archive (after an sdist's top folder)
    # the extracted documents the questions were written on (a `man` of another version
    # may render the pages differently: the build warns, and the gold check decides)
    text_sha256: str
    skip: tuple[str, ...] = ()  # path prefixes inside `docs` left out


PACKAGES: tuple[Package, ...] = (
    Package(
        corpus="python-markdown",
        registry="pypi",
        name="markdown",
        version="3.7",
        filename="markdown-3.7.tar.gz",
        sha256="2ae2471477cfd02dbbf038d5d9bc226d40def84b4fe2986e49b59b6b472bbed2",
        docs="docs",
        suffixes=(".md",),
        markup="markdown",
        licence="BSD-3-Clause (Python-Markdown; LICENSE.md in the sdist)",
        licence_file="LICENSE.md",
        text_sha256="021a6241e5e85087a3d6386af5bbdc1d412e70ce1155359556beab840e0c65be",
        skip=("templates/",),
    ),
    Package(
        corpus="click",
        registry="pypi",
        name="click",
        version="8.1.7",
        filename="click-8.1.7.tar.gz",
        sha256="ca9853ad459e787e2192211578cc907e7594e294c7ccc834310722b41b9ca6de",
        docs="docs",
        suffixes=(".rst",),
        markup="reStructuredText (Sphinx)",
        licence="BSD-3-Clause (Pallets; LICENSE.rst in the sdist)",
        licence_file="LICENSE.rst",
        text_sha256="17c994c05db89d6f8731d6614cf912c653857bd73665b89bb819592bf5144cd1",
    ),
    Package(
        corpus="coreutils",
        registry="debian",
        name="coreutils",
        version="9.1-1",
        filename="coreutils_9.1-1_amd64.deb",
        sha256="61038f857e346e8500adf53a2a0a20859f4d3a3b51570cc876b153a2d51a3091",
        docs="usr/share/man/man1",
        suffixes=(".1.gz",),
        markup="man pages rendered to plain text",
        licence="GPL-3.0-or-later (GNU coreutils; each page states it)",
        licence_file="usr/share/doc/coreutils/copyright",
        text_sha256="eb495977d08426040bbf7fed5c90a7bdf3d206f995666c4356c75e2a02639c26",
    ),
)
BY_CORPUS = {p.corpus: p for p in PACKAGES}


def default_cache() -> Path:
    if env := os.environ.get("AGENTPORT_BENCH_CACHE"):
        return Path(env).expanduser()
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "agentport" / "research-bench"


def corpus_dir(cache: Path, corpus: str) -> Path:
    return cache / "corpora" / corpus


def missing_hint(cache: Path) -> str:
    return (
        f"the real-documentation corpora are not built under {cache / 'corpora'}: run "
        f"`python benchmarks/research_quality/build_real.py --cache {cache}` "
        "(needs pip, apt-get and man, and network access to PyPI and Debian)"
    )


# ── questions ──


def load_questions(path: Path = QUESTIONS) -> list[dict[str, Any]]:
    """The questions of *path* (TOML, `[[q]]` tables) as the scorer's records: `id`,
    `corpus`, `type`, `question`, `answers` (a list of accepted-spelling lists),
    `gold_docs`, `sources` ({file, heading}), `planted`, `plant`, `bridge`, `absent`,
    `answerable`. `ValueError` naming the question and field on a malformed entry."""
    data = tomllib.loads(path.read_text(encoding="utf-8"))
    out: list[dict[str, Any]] = []
    seen: set[str] = set()
    for n, raw in enumerate(data.get("q", []), 1):
        qid = str(raw.get("id") or f"#{n}")

        def bad(field: str, why: str, qid: str = qid) -> ValueError:
            return ValueError(f"{path.name}: question {qid}: {field}: {why}")

        for key in ("id", "corpus", "type", "question"):
            if not isinstance(raw.get(key), str) or not raw[key].strip():
                raise bad(key, "missing or not a string")
        if qid in seen:
            raise bad("id", "used twice")
        seen.add(qid)
        if raw["type"] not in TYPES:
            raise bad("type", f"not one of {', '.join(TYPES)}")
        if raw["corpus"] not in BY_CORPUS:
            raise bad("corpus", f"not one of {', '.join(BY_CORPUS)}")
        answerable = raw["type"] != "unanswerable"
        answers = [[a] if isinstance(a, str) else list(a) for a in raw.get("answers", [])]
        if answerable and not answers:
            raise bad("answers", "an answerable question needs at least one")
        if not answerable and answers:
            raise bad("answers", "an unanswerable question has none")
        sources = list(raw.get("sources", []))
        if answerable and not sources:
            raise bad("sources", "an answerable question names its source files")
        for s in sources:
            if not isinstance(s, Mapping) or not s.get("file"):
                raise bad("sources", "each source is {file = ..., heading = ...}")
        planted = list(raw.get("planted", []))
        plant = raw.get("plant")
        if raw["type"] == "planted" and (
            not planted or not isinstance(plant, Mapping) or not plant.get("find")
        ):
            raise bad("plant", "a planted question needs planted values and plant.find/replace")
        out.append(
            {
                "id": qid,
                "corpus": raw["corpus"],
                "type": raw["type"],
                "question": raw["question"].strip(),
                "answers": answers,
                "sources": [dict(s) for s in sources],
                "gold_docs": list(dict.fromkeys(str(s["file"]) for s in sources)),
                "planted": planted,
                "plant": dict(plant) if isinstance(plant, Mapping) else None,
                "bridge": list(raw.get("bridge", [])),
                "absent": list(raw.get("absent", [])),
                "answerable": answerable,
            }
        )
    return out


# ── download ──


def _sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def download(pkg: Package, folder: Path) -> Path:
    """*pkg*'s archive in *folder* (downloaded when absent), its sha256 checked."""
    folder.mkdir(parents=True, exist_ok=True)
    target = folder / pkg.filename
    if not target.exists():
        if pkg.registry == "pypi":
            argv = [sys.executable, "-m", "pip", "download", "--no-deps", "--no-binary", ":all:"]
            argv += ["-q", "-d", str(folder), f"{pkg.name}=={pkg.version}"]
        else:
            argv = ["apt-get", "download", "-q", f"{pkg.name}={pkg.version}"]
        print("$ " + " ".join(argv), file=sys.stderr)
        try:
            subprocess.run(argv, cwd=folder, check=True)
        except (OSError, subprocess.CalledProcessError) as exc:
            hint = " (run `apt-get update` first?)" if pkg.registry == "debian" else ""
            raise SystemExit(f"cannot download {pkg.filename}: {exc}{hint}") from None
    got = _sha256(target)
    if got != pkg.sha256:
        raise SystemExit(f"{target}: sha256 {got}, pinned {pkg.sha256}: refusing to build")
    return target


# ── extract ──


def _ar_members(data: bytes) -> Iterable[tuple[str, bytes]]:
    """The members of a Debian package (an `ar` archive)."""
    if not data.startswith(b"!<arch>\n"):
        raise ValueError("not an ar archive")
    pos = 8
    while pos + 60 <= len(data):
        header = data[pos : pos + 60]
        name = header[:16].decode().strip().rstrip("/")
        size = int(header[48:58].decode().strip())
        yield name, data[pos + 60 : pos + 60 + size]
        pos += 60 + size + (size % 2)


def _deb_files(archive: Path, prefix: str) -> dict[str, bytes]:
    for name, body in _ar_members(archive.read_bytes()):
        if name.startswith("data.tar"):
            with tarfile.open(fileobj=io.BytesIO(body)) as tar:
                return {
                    m.name.removeprefix("./").removeprefix(prefix + "/"): tar.extractfile(m).read()  # type: ignore[union-attr]
                    for m in tar.getmembers()
                    if m.isfile() and m.name.removeprefix("./").startswith(prefix + "/")
                }
    raise ValueError(f"{archive}: no data.tar member")


def _sdist_files(archive: Path, prefix: str) -> dict[str, bytes]:
    out: dict[str, bytes] = {}
    with tarfile.open(archive) as tar:
        for m in tar.getmembers():
            parts = m.name.split("/", 1)
            if m.isfile() and len(parts) == 2 and parts[1].startswith(prefix + "/"):
                out[parts[1].removeprefix(prefix + "/")] = tar.extractfile(m).read()  # type: ignore[union-attr]
    return out


def render_man(roff: bytes) -> str:
    """A man page as `man` shows it, without overstrike or hyphenation, 80 columns."""
    env = os.environ | {"MANWIDTH": "80", "LC_ALL": "C.UTF-8", "MAN_KEEP_FORMATTING": ""}
    text = subprocess.run(
        ["man", "-l", "-E", "UTF-8", "--nh", "--nj", "-"],
        input=gzip.decompress(roff),
        capture_output=True,
        check=True,
        env=env,
    ).stdout
    plain = subprocess.run(["col", "-bx"], input=text, capture_output=True, check=True).stdout
    return plain.decode("utf-8")


def extract(pkg: Package, archive: Path, target: Path) -> int:
    """Write *pkg*'s documentation files into *target* (emptied first); returns the count."""
    files = (
        _deb_files(archive, pkg.docs)
        if pkg.registry == "debian"
        else _sdist_files(archive, pkg.docs)
    )
    if target.exists():
        shutil.rmtree(target)
    count = 0
    for rel, body in sorted(files.items()):
        if not rel.endswith(pkg.suffixes) or rel.startswith(pkg.skip):
            continue
        if rel.endswith(".1.gz"):
            rel, text = rel.removesuffix(".1.gz") + ".txt", render_man(body)
        else:
            text = body.decode("utf-8")
        path = target / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
        count += 1
    return count


# ── planted near-copies ──


def _paragraph(text: str, needle: str) -> str:
    """The blank-line separated block of *text* holding *needle* (exactly once)."""
    if text.count(needle) != 1:
        raise ValueError(f"occurs {text.count(needle)} times, not once")
    blocks = re.split(r"\n[ \t]*\n", text)
    return next(b for b in blocks if needle in b).strip("\n")


def _heading_lines(markup: str, heading: str, level: int) -> list[str]:
    if markup == "markdown":
        return ["#" * level + " " + heading, ""]
    if markup.startswith("reStructuredText"):
        return [heading, "=-"[level - 1] * len(heading), ""]
    return [heading.upper() if level == 1 else heading, ""]


def plant(questions: Sequence[Mapping[str, Any]], pkg: Package, target: Path) -> list[str]:
    """Write the archive pages of *pkg*'s planted questions; returns their paths."""
    pages: dict[str, list[str]] = {}
    for q in questions:
        if q["corpus"] != pkg.corpus or q["type"] != "planted":
            continue
        source = q["sources"][0]
        text = (target / source["file"]).read_text(encoding="utf-8")
        try:
            block = _paragraph(text, q["plant"]["find"])
        except ValueError as exc:
            raise SystemExit(f"{q['id']}: plant.find in {source['file']}: {exc}") from None
        changed = block.replace(q["plant"]["find"], q["plant"]["replace"])
        page = pages.setdefault(source["file"], [])
        if not page:
            title = Path(source["file"]).stem.replace("-", " ").replace("_", " ")
            page += _heading_lines(pkg.markup, f"{title} (archived notes)", 1)
        page += _heading_lines(pkg.markup, str(source.get("heading") or "Notes"), 2)
        page += [changed, ""]
    written = []
    for rel, lines in pages.items():
        path = target / "archive" / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text("\n".join(lines), encoding="utf-8")
        written.append(path.relative_to(target).as_posix())
    return written


# ── checks ──

_WORD = re.compile(r"\w+", re.UNICODE)


def normalise(text: str) -> str:
    """The scorer's normal form (score.normalise): case-folded words, spaces at both ends."""
    sys.path.insert(0, str(HERE))
    import score

    return str(score.normalise(text))


def read_docs(folder: Path) -> dict[str, str]:
    """Every document of a corpus folder: relative path -> text."""
    return {
        p.relative_to(folder).as_posix(): p.read_text(encoding="utf-8")
        for p in sorted(folder.rglob("*"))
        if p.is_file() and p.suffix.lower() in SUFFIXES
    }


def check(
    questions: Sequence[Mapping[str, Any]], corpora: Mapping[str, Mapping[str, str]]
) -> list[str]:
    """One line per failed check (empty: every check holds). *corpora*: corpus -> docs."""
    problems: list[str] = []
    for q in questions:
        docs = corpora.get(q["corpus"])
        if docs is None:
            continue
        qid = q["id"]
        for s in q["sources"]:
            text = docs.get(s["file"])
            if text is None:
                problems.append(f"{qid}: source {s['file']} is not in corpus {q['corpus']}")
                continue
            heading = str(s.get("heading") or "")
            if heading and normalise(heading) not in normalise(text):
                problems.append(f"{qid}: heading {heading!r} not in {s['file']}")
        gold = normalise(" ".join(docs.get(f, "") for f in q["gold_docs"]))
        for spellings in q["answers"]:
            if not any(normalise(s).strip() and normalise(s) in gold for s in spellings):
                problems.append(f"{qid}: gold {spellings!r} not in {', '.join(q['gold_docs'])}")
        if q["type"] == "two_hop" and len(q["gold_docs"]) > 1:
            bridge = normalise(docs.get(q["gold_docs"][0], ""))
            if all(any(normalise(s) in bridge for s in sp) for sp in q["answers"]):
                problems.append(f"{qid}: the bridge {q['gold_docs'][0]} alone holds every answer")
        for value in q["planted"]:
            holders = [p for p, t in docs.items() if normalise(value) in normalise(t)]
            archive = "archive/" + q["sources"][0]["file"]
            if archive not in holders:
                problems.append(f"{qid}: planted {value!r} not in {archive}")
            if others := [p for p in holders if p != archive]:
                problems.append(f"{qid}: planted {value!r} also in {', '.join(others[:3])}")
        for word in q["absent"]:
            if holders := [p for p, t in docs.items() if normalise(word) in normalise(t)]:
                problems.append(f"{qid}: 'absent' {word!r} occurs in {', '.join(holders[:3])}")
    return problems


# The CI slice: one question of each type, and the files it reads plus a few neighbours
# (so retrieval still has to choose), copied verbatim from the built corpora into a
# fixture that CI reads without network (`--excerpt DIR`).
SLICE = (
    "cu-single-1",
    "md-reverse-1",
    "cu-two_hop-4",
    "click-comparison-3",
    "cu-planted-2",
    "md-unanswerable-3",
)
EXCERPT: dict[str, tuple[str, ...]] = {
    "coreutils": (
        "timeout.txt",
        "cksum.txt",
        "sum.txt",
        "nice.txt",
        "archive/nice.txt",
        "sleep.txt",
        "head.txt",
    ),
    "python-markdown": (
        "extensions/nl2br.md",
        "extensions/admonition.md",
        "extensions/legacy_em.md",
        "extensions/smarty.md",
    ),
    "click": ("wincmd.rst", "unicode-support.rst", "exceptions.rst"),
}


def _licence_text(pkg: Package, archive: Path) -> bytes:
    if pkg.registry == "debian":
        folder, _, name = pkg.licence_file.rpartition("/")
        return _deb_files(archive, folder)[name]
    with tarfile.open(archive) as tar:
        for m in tar.getmembers():
            if m.isfile() and m.name.split("/", 1)[-1] == pkg.licence_file:
                return tar.extractfile(m).read()  # type: ignore[union-attr]
    raise ValueError(f"{archive}: no {pkg.licence_file}")


def excerpt(cache: Path, target: Path) -> None:
    """Copy `EXCERPT` from the built corpora into *target*/corpora (verbatim), each
    package's licence into *target*/licences, and a README naming sources and sha256s."""
    rows = []
    for corpus, files in EXCERPT.items():
        pkg = BY_CORPUS[corpus]
        for rel in files:
            src = corpus_dir(cache, corpus) / rel
            dst = target / "corpora" / corpus / rel
            dst.parent.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(src, dst)
            rows.append(f"| `corpora/{corpus}/{rel}` | `{_sha256(dst)}` |")
        name = f"{corpus}.{Path(pkg.licence_file).name}"
        licence = target / "licences" / name
        licence.parent.mkdir(parents=True, exist_ok=True)
        licence.write_bytes(_licence_text(pkg, cache / "downloads" / pkg.filename))
    sources = "\n".join(
        f"- `{p.corpus}`: {p.name} {p.version} ({p.registry}, `{p.filename}`, sha256 "
        f"`{p.sha256}`), {p.markup}; licence {p.licence}, copy in "
        f"`licences/{p.corpus}.{Path(p.licence_file).name}`"
        for p in PACKAGES
    )
    (target / "README.md").write_text(
        "# Real-documentation excerpt (the research benchmark's CI slice)\n\n"
        "Verbatim files of the corpora `benchmarks/research_quality/build_real.py` builds,\n"
        "copied by `build_real.py --excerpt` so CI runs the slice without network\n"
        f"(questions {', '.join(SLICE)} of `real_questions.toml`). `archive/` pages are the\n"
        "builder's planted near-copies (a value changed on purpose), not upstream text.\n\n"
        "Sources and licences (each file keeps its upstream licence):\n\n"
        f"{sources}\n\n| file | sha256 |\n|---|---|\n" + "\n".join(rows) + "\n",
        encoding="utf-8",
    )


def manifest(pkg: Package, folder: Path, docs: Mapping[str, str]) -> dict[str, Any]:
    digest = hashlib.sha256()
    for rel, text in sorted(docs.items()):
        if rel.startswith("archive/"):
            continue  # the planted pages change with the questions, not with the package
        digest.update(rel.encode() + b"\0" + text.encode() + b"\0")
    return {
        "corpus": pkg.corpus,
        "package": f"{pkg.name}=={pkg.version}" if pkg.registry == "pypi" else pkg.name,
        "version": pkg.version,
        "registry": pkg.registry,
        "file": pkg.filename,
        "sha256": pkg.sha256,
        "markup": pkg.markup,
        "licence": pkg.licence,
        "documents": len(docs),
        "content_sha256": digest.hexdigest(),
        "matches_pinned_text": digest.hexdigest() == pkg.text_sha256,
    }


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--cache", type=Path, default=None, help="default: " + str(default_cache()))
    parser.add_argument("--only", action="append", choices=sorted(BY_CORPUS), default=None)
    parser.add_argument("--check", action="store_true", help="check the built corpora only")
    parser.add_argument("--questions", type=Path, default=QUESTIONS)
    parser.add_argument("--excerpt", type=Path, help="write the CI slice's fixture here")
    args = parser.parse_args(argv)
    cache = (args.cache or default_cache()).expanduser()
    if args.excerpt:
        excerpt(cache, args.excerpt)
        print(f"wrote {args.excerpt}")
        return 0
    questions = load_questions(args.questions)
    corpora: dict[str, dict[str, str]] = {}
    for pkg in PACKAGES:
        if args.only and pkg.corpus not in args.only:
            continue
        target = corpus_dir(cache, pkg.corpus)
        if not args.check:
            archive = download(pkg, cache / "downloads")
            n = extract(pkg, archive, target)
            pages = plant(questions, pkg, target)
            docs = read_docs(target)
            info = manifest(pkg, target, docs)
            (cache / "corpora" / f"{pkg.corpus}.manifest.json").write_text(
                json.dumps(info, indent=2) + "\n", encoding="utf-8"
            )
            print(f"{pkg.corpus}: {n} documents, {len(pages)} archive page(s) -> {target}")
            if not info["matches_pinned_text"]:
                print(
                    f"warning: {pkg.corpus}: the extracted text differs from the text the "
                    "questions were written on (another `man`/groff?); scores may not compare",
                    file=sys.stderr,
                )
        elif not target.is_dir():
            raise SystemExit(missing_hint(cache))
        corpora[pkg.corpus] = read_docs(target)
    problems = check(questions, corpora)
    for line in problems:
        print(line, file=sys.stderr)
    mine = [q for q in questions if q["corpus"] in corpora]
    print(f"{len(mine)} questions checked, {len(problems)} problem(s)")
    return 1 if problems else 0


if __name__ == "__main__":
    raise SystemExit(main())
