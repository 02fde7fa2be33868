"""The follow-up round: after the first pass, a bounded round searches for what the
findings name but do not answer (a two-hop question's bridge, a comparison's other side)."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from agentport.workflows.deep_research import ResearchConfig, plan_research
from agentport.workflows.deep_research._followup import follow_up_angles, linked_titles

TITLES = ["Velmora", "Karsk region", "Tamak", "Stiren", "Port Velmora"]


def test_the_bridge_of_a_two_hop_question_is_searched() -> None:
    found = [("Velmora is a town in the Karsk region, on the river Isker.", "Velmora")]
    angles = follow_up_angles(
        "Who governs the region that Velmora is in?", found, ["Velmora"], TITLES
    )
    assert [a.label for a in angles] == ["follow-up: Karsk region"]
    assert angles[0].query.startswith("Karsk region")
    assert "governs" in angles[0].query


def test_the_other_side_of_a_comparison_is_searched() -> None:
    found = [
        ("Tamak has a population of 84,000.", "Tamak"),
        ("Stiren is a town in the Sousak region.", "Stiren"),
    ]
    angles = follow_up_angles(
        "Which town has more inhabitants, Tamak or Stiren?",
        found,
        ["Tamak", "Stiren"],
        TITLES,
        common=frozenset({"town"}),
    )
    assert [a.label for a in angles][:1] == ["follow-up: Stiren"]


def test_nothing_to_follow_when_every_name_is_answered() -> None:
    found = [("Tamak has a population of 84,000.", "Tamak")]
    assert follow_up_angles("How many people live in Tamak?", found, ["Tamak"], TITLES) == []


@given(
    st.lists(st.sampled_from(TITLES), max_size=6),
    st.integers(1, 4),
    st.lists(st.sampled_from(["", " is a town in the Karsk region.", " borders Tamak."])),
)
def test_follow_ups_are_bounded_distinct_and_new(names: list[str], limit: int, tails: list[str]):
    question = "Which is larger, " + " or ".join(names or ["Velmora"]) + "?"
    found = [(n + t, n) for n, t in zip(names, tails, strict=False) if t]
    done = ["Velmora larger"]
    angles = follow_up_angles(question, found, names, TITLES, done, limit)
    assert len(angles) <= limit
    assert len({a.query for a in angles}) == len(angles)
    assert not any(a.query in done for a in angles)


def test_the_plan_counts_the_follow_up_round() -> None:
    seed = plan_research(ResearchConfig())
    more = plan_research(ResearchConfig(rounds=2))
    assert more.upper_bound_calls > seed.upper_bound_calls
    small = plan_research(ResearchConfig.for_small_model())
    single = plan_research(ResearchConfig.for_small_model(rounds=1))
    assert small.max_fetches == single.max_fetches + 3
    assert small.upper_bound_calls > single.upper_bound_calls
    assert any(line.startswith("follow-up: 1 round") for line in small.lines())
    assert not any(line.startswith("follow-up") for line in single.lines())


def test_a_link_names_its_bridge_by_file_name() -> None:
    stems = {"setuptools": "Setuptools Integration", "usage": "Usage", "realpath": "realpath"}
    assert linked_titles("See :doc:`/setuptools`.", stems) == ["Setuptools Integration"]
    assert linked_titles("See :doc:`the guide <setuptools>`.", stems) == ["Setuptools Integration"]
    assert linked_titles("Read [the usage](docs/usage.md#top) first.", stems) == ["Usage"]
    assert linked_titles("Note realpath(1) is preferred.", stems) == ["realpath"]
    assert linked_titles("See :doc:`/missing` and [x](nowhere.md).", stems) == []


def test_a_bridge_named_in_the_first_hops_words_is_still_followed() -> None:
    """The first hop's sentence shares the question's words ("buffering") but says nothing
    about the bridge's author: the bridge's own document must answer, with a person."""
    question = "Who wrote the program that the stdbuf page gives as an example of buffering?"
    found = [("If COMMAND adjusts its buffering ('tee' does for example) it wins.", "stdbuf")]
    angles = follow_up_angles(question, found, ["stdbuf"], ["stdbuf", "tee"])
    assert [a.label for a in angles] == ["follow-up: tee"]
    assert "author" in angles[0].query.split()
    assert "buffering" not in angles[0].query.split(), "the first hop's words find it again"
    credited = [*found, ("Written by Mike Parker.", "tee")]
    assert follow_up_angles(question, credited, ["stdbuf", "tee"], ["stdbuf", "tee"]) == []


def test_a_link_bridge_is_followed_through_the_corpus_titles() -> None:
    found = [("Completion works for an installed script. See :doc:`/setuptools`.", "Completion")]
    angles = follow_up_angles(
        "Which entry_points group declares the script that completion needs?",
        found,
        ["Completion"],
        ["Completion", "Setuptools Integration"],
        by_stem={"setuptools": "Setuptools Integration", "completion": "Completion"},
    )
    assert [a.label for a in angles] == ["follow-up: Setuptools Integration"]
