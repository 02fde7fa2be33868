"""A fictional gazetteer rendered into a corpus, with questions, gold answers and gold
evidence documents (the shape of BrowseComp-Plus: a fixed corpus, gold evidence, hard
negatives).

Why fictional: every fact is made here from a pinned seed, so no licence applies, the
rendered text is ours, and no model can answer from what it memorised in training: a right
answer can only come from the documents. The same seed always gives the same corpus and
questions (`build(seed)` is pure; `write(folder, seed)` renders it).

The world: towns (region, river, founding year, mayor, industry, population, twin town) and
regions (capital, governor, area). Hard negatives: a town whose name shares a word with
another ("Port Velmora" beside "Velmora"), and travel notes that mention many towns without
stating their facts. A planted near-copy: an "archive" page that repeats a town's page with
one fact changed.

Question types (`TYPES`): single (a fact of one town), reverse (which town has this fact),
two_hop (a fact of the region a town belongs to: two documents), comparison (which of two
towns is larger: both populations are the gold answers), planted (a fact whose near-copy
says otherwise: the planted value must never be confirmed), unanswerable (a town that does
not exist, or a fact no document states: the report must say the corpus does not answer).
"""

from __future__ import annotations

import json
import random
from dataclasses import asdict, dataclass, field
from pathlib import Path

__all__ = ["SEED", "TYPES", "Question", "World", "build", "write"]

SEED = 20261202
TYPES = ("single", "reverse", "two_hop", "comparison", "planted", "unanswerable")

_ONSETS = "b br d dr f g gr h k kl l m n p r s st t tr v z".split()  # noqa: SIM905
_VOWELS = "a e i o u ae ei ou".split()  # noqa: SIM905
_CODAS = "n r l s m th nd rk st".split()  # noqa: SIM905
_ENDINGS = "a ia en or ine ova ak ith um".split()  # noqa: SIM905
_GIVEN = (  # noqa: SIM905
    "Ilse Marek Tova Anselm Brin Caro Dagny Emeric Fenna Goran Hedda Ivo Jolan Kasia Lorne "
    "Mira Nils Orla Petra Quill Runa Sten Talia Ulric Vesna Wilm Yara Zeno"
).split()
_FAMILY = (  # noqa: SIM905
    "Varga Holm Ostrava Quist Renner Salo Tamsin Ullberg Vance Wexler Adler Brandt Corvin "
    "Dahl Eklund Falk Grau Hollis Ingram Jorvik Kessler Lund Maren Nyberg"
).split()
_INDUSTRIES = (
    "glassmaking",
    "salt mining",
    "shipbuilding",
    "wool weaving",
    "clockmaking",
    "paper milling",
    "copper smelting",
    "cheese making",
    "bell casting",
    "rope making",
)


@dataclass(frozen=True)
class Town:
    name: str
    region: str
    river: str
    founded: int
    mayor: str
    industry: str
    population: int
    twin: str = ""


@dataclass(frozen=True)
class Region:
    name: str
    capital: str
    governor: str
    area: int


@dataclass(frozen=True)
class Question:
    """One benchmark question: `id`, `type` (one of `TYPES`), the `question`, the `answers`
    (every one must appear in the report's summary or findings; each is a list of accepted
    spellings), `gold_docs` (corpus paths the evidence is in), `planted` (values that must
    not be stated) and `answerable`."""

    id: str
    type: str
    question: str
    answers: list[list[str]] = field(default_factory=list)
    gold_docs: list[str] = field(default_factory=list)
    planted: list[str] = field(default_factory=list)
    answerable: bool = True


@dataclass(frozen=True)
class World:
    documents: dict[str, str]  # corpus path -> markdown
    questions: list[Question]


def _name(rng: random.Random, taken: set[str]) -> str:
    while True:
        word = rng.choice(_ONSETS) + rng.choice(_VOWELS) + rng.choice(_CODAS)
        word = (word + rng.choice(_ENDINGS)).capitalize()
        if 5 <= len(word) <= 9 and word not in taken:
            taken.add(word)
            return word


def _number(n: int) -> str:
    return f"{n:,}"


def _spellings(n: int) -> list[str]:
    return [_number(n), str(n)]


def _slug(name: str) -> str:
    return name.lower().replace(" ", "-")


def _town_page(t: Town, *, note: str = "") -> str:
    lines = [
        f"# {t.name}",
        "",
        f"{t.name} is a town in the {t.region} region, on the river {t.river}.",
        "",
        "## History",
        "",
        f"{t.name} was founded in {t.founded} as a market on the {t.river} crossing.",
        "",
        "## Government",
        "",
        f"The mayor of {t.name} is {t.mayor}.",
        "",
        "## Economy",
        "",
        f"The main industry of {t.name} is {t.industry}.",
        "",
        "## Population",
        "",
        f"{t.name} has a population of {_number(t.population)}.",
    ]
    if t.twin:
        lines += ["", "## Twin towns", "", f"{t.name} is twinned with {t.twin}."]
    if note:
        lines += ["", note]
    return "\n".join(lines) + "\n"


def _region_page(r: Region) -> str:
    return (
        f"# {r.name} region\n\n"
        f"{r.name} is a region of the northern lowlands.\n\n"
        "## Administration\n\n"
        f"The capital of the {r.name} region is {r.capital}.\n\n"
        f"The governor of the {r.name} region is {r.governor}.\n\n"
        "## Geography\n\n"
        f"The {r.name} region covers {_number(r.area)} square kilometres.\n"
    )


def build(seed: int = SEED, *, towns: int = 36, regions: int = 6, per_type: int = 8) -> World:
    """The corpus and the questions for *seed* (pure: the same seed, the same world)."""
    rng = random.Random(seed)
    taken: set[str] = set()
    rivers = [_name(rng, taken) for _ in range(8)]
    region_names = [_name(rng, taken) for _ in range(regions)]
    people = [f"{g} {f}" for g in _GIVEN for f in _FAMILY]
    rng.shuffle(people)
    years = rng.sample(range(1480, 1890), towns + 8)
    pops = rng.sample(range(2_000, 190_000, 100), towns + 8)
    town_list: list[Town] = []
    for i in range(towns):
        town_list.append(
            Town(
                name=_name(rng, taken),
                region=region_names[i % regions],
                river=rng.choice(rivers),
                founded=years[i],
                mayor=people.pop(),
                industry=_INDUSTRIES[i % len(_INDUSTRIES)],
                population=pops[i],
            )
        )
    # twins: pairs of towns (both pages say it)
    for i in range(0, towns - 1, 6):
        a, b = town_list[i], town_list[i + 3]
        town_list[i] = Town(**(asdict(a) | {"twin": b.name}))
        town_list[i + 3] = Town(**(asdict(b) | {"twin": a.name}))
    region_list = [
        Region(
            name=r,
            capital=next(t.name for t in town_list if t.region == r),
            governor=people.pop(),
            area=rng.randrange(1_200, 9_800, 10),
        )
        for r in region_names
    ]
    docs: dict[str, str] = {}
    for t in town_list:
        docs[f"towns/{_slug(t.name)}.md"] = _town_page(t)
    for r in region_list:
        docs[f"regions/{_slug(r.name)}.md"] = _region_page(r)

    # hard negatives: "Port <name>" shares its name with a real town, other facts differ
    negatives: list[Town] = []
    for j, base in enumerate(town_list[1 : 1 + per_type * 2 : 2]):
        neg = Town(
            name=f"Port {base.name}",
            region=region_names[(region_names.index(base.region) + 1) % regions],
            river=rng.choice([r for r in rivers if r != base.river]),
            founded=years[towns + j % 8],
            mayor=people.pop(),
            industry=_INDUSTRIES[(j + 3) % len(_INDUSTRIES)],
            population=pops[towns + j % 8],
        )
        negatives.append(neg)
        docs[f"towns/port-{_slug(base.name)}.md"] = _town_page(neg)
    # travel notes: mention many towns, state none of the asked facts
    for k in range(4):
        sample = rng.sample(town_list, 8)
        body = "\n\n".join(
            f"## {t.name}\n\nWe stopped in {t.name} for a night; the market square of "
            f"{t.name} was busy and the inn near the {t.river} was full."
            for t in sample
        )
        docs[f"notes/travel-{k + 1}.md"] = f"# Travel notes {k + 1}\n\n{body}\n"

    questions: list[Question] = []

    def add(kind: str, text: str, **kw: object) -> None:
        n = sum(1 for q in questions if q.type == kind) + 1
        questions.append(Question(id=f"{kind}-{n}", type=kind, question=text, **kw))  # type: ignore[arg-type]

    order = rng.sample(range(towns), towns)
    for i in order[:per_type]:
        t = town_list[i]
        page = f"towns/{_slug(t.name)}.md"
        asks = [
            (f"When was {t.name} founded?", [str(t.founded)]),
            (f"Who is the mayor of {t.name}?", [t.mayor]),
            (f"What is the population of {t.name}?", _spellings(t.population)),
            (f"What is the main industry of {t.name}?", [t.industry]),
        ]
        text, answer = asks[i % len(asks)]
        add("single", text, answers=[answer], gold_docs=[page])
    for i in order[per_type : 2 * per_type]:
        t = town_list[i]
        page = f"towns/{_slug(t.name)}.md"
        asks = [
            (f"Which town has {t.mayor} as its mayor?", t.name),
            (f"Which town was founded in {t.founded}?", t.name),
            (f"Which town has a population of {_number(t.population)}?", t.name),
        ]
        text, answer = asks[i % len(asks)]
        add("reverse", text, answers=[[answer]], gold_docs=[page])
    for i in order[2 * per_type : 3 * per_type]:
        t = town_list[i]
        r = next(r for r in region_list if r.name == t.region)
        pages = [f"towns/{_slug(t.name)}.md", f"regions/{_slug(r.name)}.md"]
        if i % 2:
            add(
                "two_hop",
                f"Who governs the region that {t.name} is in?",
                answers=[[r.governor]],
                gold_docs=pages,
            )
        else:
            add(
                "two_hop",
                f"How large is the region that {t.name} belongs to?",
                answers=[_spellings(r.area)],
                gold_docs=pages,
            )
    for k in range(per_type):
        a, b = town_list[order[3 * per_type + k % (towns - 3 * per_type)]], town_list[order[k]]
        add(
            "comparison",
            f"Which town has more inhabitants, {a.name} or {b.name}?",
            answers=[_spellings(a.population), _spellings(b.population)],
            gold_docs=[f"towns/{_slug(a.name)}.md", f"towns/{_slug(b.name)}.md"],
        )
    for k, i in enumerate(order[per_type : 2 * per_type]):
        t = town_list[i]
        page = f"towns/{_slug(t.name)}.md"
        if k % 2:
            wrong = t.founded + rng.choice([-30, -11, 10, 25])
            copy = Town(**(asdict(t) | {"founded": wrong}))
            text, answer, planted = (
                f"In which year was {t.name} founded?",
                [str(t.founded)],
                str(wrong),
            )
        else:
            wrong = t.population + rng.choice([-1_500, 2_300, 4_100])
            copy = Town(**(asdict(t) | {"population": wrong}))
            text, answer, planted = (
                f"How many people live in {t.name}?",
                _spellings(t.population),
                _number(wrong),
            )
        docs[f"archive/{_slug(t.name)}-old-guide.md"] = _town_page(
            copy, note="This page is kept from an old visitors' guide."
        )
        add("planted", text, answers=[answer], gold_docs=[page], planted=[planted])
    for k in range(per_type):
        if k % 2:
            ghost = _name(rng, taken)
            add("unanswerable", f"What is the population of {ghost}?", answerable=False)
        else:
            t = town_list[order[-1 - k]]
            asks = [
                f"What is the elevation of {t.name}?",
                f"Which football club plays in {t.name}?",
                f"Who designed the coat of arms of {t.name}?",
                f"What is the average rainfall in {t.name}?",
            ]
            add(
                "unanswerable",
                asks[k // 2 % len(asks)],
                answerable=False,
                gold_docs=[f"towns/{_slug(t.name)}.md"],
            )
    return World(documents=docs, questions=questions)


def write(folder: Path, seed: int = SEED, **sizes: int) -> World:
    """Render `build(seed)` into *folder*/corpus and *folder*/questions.json."""
    world = build(seed, **sizes)
    for rel, text in world.documents.items():
        path = folder / "corpus" / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
    (folder / "questions.json").write_text(
        json.dumps([asdict(q) for q in world.questions], indent=2) + "\n", encoding="utf-8"
    )
    return world
