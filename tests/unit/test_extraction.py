"""The built-in heuristic extractor and its data file."""

from __future__ import annotations

import json
from importlib import resources

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from mnemo_server.api.memories.rules import memory_draft_violations
from mnemo_server.domain.extraction import (
    ExtractedMemory,
    default_patterns,
    extract,
    parse_patterns,
    slug,
)
from mnemo_server.domain.memory_models import MemoryScope, MemorySource
from mnemo_server.domain.models import NewMessage


def user(text: str) -> NewMessage:
    return NewMessage(message_json="{}", role="user", text=text)


def facts(*texts: str) -> list[tuple[str, str]]:
    return [(e.key, e.text) for e in extract([user(t) for t in texts])]


@pytest.mark.parametrize(
    ("said", "key", "text"),
    [
        ("My name is Ada Lovelace.", "profile.name", "The user's name is Ada Lovelace."),
        ("my name is ada", "profile.name", "The user's name is Ada."),
        ("My name's José.", "profile.name", "The user's name is José."),
        ("Hi, I'm Ada!", "profile.name", "The user's name is Ada."),
        ("Hello there, I am Grace Hopper", "profile.name", "The user's name is Grace Hopper."),
        ("Please call me Addie.", "profile.preferred_name", "The user wants to be called Addie."),
        (
            "You can call me Mr Smith",
            "profile.preferred_name",
            "The user wants to be called Mr Smith.",
        ),
        ("I go by Sam", "profile.preferred_name", "The user wants to be called Sam."),
        ("My pronouns are she/her.", "profile.pronouns", "The user's pronouns are she/her."),
        ("I like sushi.", "preference.sushi", "The user likes sushi."),
        (
            "I really love hiking in the mountains too!",
            "preference.hiking-in-the-mountain",
            "The user loves hiking in the mountains.",
        ),
        (
            "I prefer tea over coffee",
            "preference.tea-over-coffee",
            "The user prefers tea over coffee.",
        ),
        (
            "I don't like spicy food, but it's fine.",
            "preference.spicy-food",
            "The user doesn't like spicy food.",
        ),
        ("I can't stand loud music", "preference.loud-music", "The user dislikes loud music."),
        ("I hate my commute", "preference.their-commute", "The user dislikes their commute."),
        (
            "My favorite color is dark green",
            "preference.favorite.color",
            "The user's favorite color is dark green.",
        ),
        ("I'm vegan", "profile.diet", "The user is vegan."),
        ("I am a vegetarian.", "profile.diet", "The user is vegetarian."),
        ("I only eat halal food", "profile.diet", "The user eats only halal food."),
        ("I don't eat pork.", "diet.avoids.pork", "The user doesn't eat pork."),
        ("I'm lactose intolerant", "health.intolerance.lactose", "The user is lactose intolerant."),
        (
            "I'm severely allergic to peanuts and shellfish.",
            "health.allergy.peanut-and-shellfish",
            "The user is allergic to peanuts and shellfish.",
        ),
        ("I have a peanut allergy", "health.allergy.peanut", "The user has a peanut allergy."),
        ("I live in New York City.", "profile.location", "The user lives in New York City."),
        (
            "I live in Rio de Janeiro with my wife",
            "profile.location",
            "The user lives in Rio de Janeiro.",
        ),
        ("I'm based in São Paulo", "profile.location", "The user is based in São Paulo."),
        ("I just moved to the UK", "profile.location", "The user lives in the UK."),
        ("I'm originally from Lagos", "profile.hometown", "The user is from Lagos."),
        (
            "Please remember that my sister's birthday is May 3.",
            "",
            "The user asked to remember: my sister's birthday is May 3.",
        ),
        (
            "Don't forget: the wifi password is on the fridge",
            "",
            "The user asked to remember: the wifi password is on the fridge.",
        ),
    ],
)
def test_finds_each_kind_of_fact(said: str, key: str, text: str) -> None:
    assert facts(said) == [(key, text)]


@pytest.mark.parametrize(
    "said",
    [
        "I'm sorry.",
        "I'm tired and hungry",
        "I'm American",
        "I'm Ada's mother",
        "I'm going to the store",
        "I'm not vegan",
        "I'm fine, thanks",
        "Call me later",
        "call me maybe",
        "I love you",
        "I like it",
        "I like that idea",
        "I hate to say it, but no",
        "I'd like a refund",
        "I would like to order",
        "Do I like sushi?",
        "If I lived in Paris I would be happy",
        "Imagine I'm vegan",
        "My friend said I'm allergic to cats",
        "I live in a small flat",
        "I remember that day",
        "Remember when we met?",
        "",
        "...",
    ],
)
def test_does_not_extract_non_facts(said: str) -> None:
    assert facts(said) == []


def test_only_user_messages_are_mined() -> None:
    messages = [
        NewMessage("{}", "system", "My name is System."),
        NewMessage("{}", "assistant", "My name is Claude and I love helping."),
        NewMessage("{}", "tool", "I live in Datacenter City."),
        user("I live in Paris."),
    ]
    found = extract(messages)
    assert [(e.key, e.message_index) for e in found] == [("profile.location", 3)]


def test_results_carry_their_message_index_pattern_and_extractor() -> None:
    found = extract([user("hello"), user("I'm vegan. I live in Oslo.")])
    assert found == [
        ExtractedMemory(
            key="profile.diet",
            text="The user is vegan.",
            scope=MemoryScope.IDENTITY,
            extractor="mnemo-heuristic-v1",
            pattern="diet.i_am",
            message_index=1,
            value="vegan",
        ),
        ExtractedMemory(
            key="profile.location",
            text="The user lives in Oslo.",
            scope=MemoryScope.IDENTITY,
            extractor="mnemo-heuristic-v1",
            pattern="location.live_in",
            message_index=1,
            value="Oslo",
        ),
    ]
    assert found[0].label == "mnemo-heuristic-v1:diet.i_am"


def test_several_facts_in_one_sentence_and_message() -> None:
    assert facts("My name is Ada and I live in Paris; I like tea and I like coffee.") == [
        ("profile.name", "The user's name is Ada."),
        ("profile.location", "The user lives in Paris."),
        ("preference.tea", "The user likes tea."),
        ("preference.coffee", "The user likes coffee."),
    ]


def test_the_last_fact_per_key_wins() -> None:
    assert facts(
        "My name is Ann.", "Actually, my name is Anna. I live in Rome.", "I live in Oslo"
    ) == [
        ("profile.name", "The user's name is Anna."),
        ("profile.location", "The user lives in Oslo."),
    ]


def test_remember_is_a_fallback_when_another_pattern_matched() -> None:
    assert facts("Please remember that I'm vegan") == [("profile.diet", "The user is vegan.")]


def test_curly_apostrophes_are_understood() -> None:
    assert facts("I\u2019m allergic to cats") == [
        ("health.allergy.cat", "The user is allergic to cats.")
    ]


def test_draft_is_a_valid_extractor_memory() -> None:
    (found,) = extract([user("I'm allergic to cats")])
    draft = found.draft("c1")
    assert draft.source is MemorySource.EXTRACTOR
    assert draft.conversation_id == ""  # identity scope
    assert draft.metadata == {"extractor": "mnemo-heuristic-v1", "pattern": "health.allergic_to"}
    assert memory_draft_violations(draft) == []


def test_slug() -> None:
    assert slug("Spicy Foods!") == "spicy-food"
    assert slug("Crème Brûlée") == "creme-brulee"
    assert slug("!!!") == ""
    assert len(slug("word " * 40)) <= 48


def test_patterns_are_data_and_compiled_once() -> None:
    assert default_patterns() is default_patterns()
    raw = json.loads(
        resources.files("mnemo_server.domain").joinpath("extraction_patterns.json").read_text()
    )
    names = [p["name"] for p in raw["patterns"]]
    assert [p.name for p in default_patterns().patterns] == names
    assert len(set(names)) == len(names)


def pattern_file(
    patterns: list[dict[str, object]], *, extractor: str = "x", clause_ends: list[str] | None = None
) -> dict[str, object]:
    """A minimal pattern file with empty word lists."""
    return {
        "extractor": extractor,
        "skip_sentences_starting_with": [],
        "connectors": [],
        "trailing_noise": [],
        "clause_ends": clause_ends or [],
        "pronoun_swaps": {},
        "stop_lists": {"none": []},
        "patterns": patterns,
    }


def test_a_custom_pattern_set_is_used() -> None:
    data = pattern_file(
        [
            {
                "name": "pet",
                "regex": "\\bmy (?P<kind>dog|cat) is called (?P<value>[^,]+)",
                "value": "proper",
                "max_words": 2,
                "stop_list": "none",
                "key": "pet.{kind_slug}",
                "text": "The user's {kind} is called {value}.",
                "scope": "identity",
            }
        ],
        extractor="custom",
        clause_ends=[","],
    )
    found = extract([user("My dog is called Rex, he is great")], parse_patterns(data))
    assert [(e.key, e.text, e.extractor) for e in found] == [
        ("pet.dog", "The user's dog is called Rex.", "custom")
    ]


@pytest.mark.parametrize(
    ("change", "message"),
    [
        ({"value": "blob"}, "unknown value kind"),
        ({"regex": "my (?P<other>x)"}, "named 'value'"),
        ({"text": "{missing}"}, "bad template"),
    ],
)
def test_malformed_patterns_are_refused(change: dict[str, str], message: str) -> None:
    pattern = {
        "name": "p",
        "regex": "(?P<value>x)",
        "value": "word",
        "max_words": 1,
        "stop_list": "none",
        "key": "",
        "text": "{value}",
        "scope": "identity",
    } | change
    with pytest.raises(ValueError, match=message):
        parse_patterns(pattern_file([pattern]))


@settings(max_examples=300, deadline=None)
@given(
    texts=st.lists(
        st.one_of(
            st.text(max_size=200),
            st.lists(
                st.sampled_from(
                    [
                        "I'm",
                        "my name is",
                        "call me",
                        "I like",
                        "I live in",
                        "remember that",
                        "Ada",
                        "Paris",
                        "vegan",
                        "allergic to",
                        ",",
                        ".",
                        "?",
                        "\n",
                        "the",
                        "I",
                    ]
                ),
                max_size=20,
            ).map(" ".join),
        ),
        max_size=5,
    )
)
def test_never_raises_and_always_yields_valid_drafts(texts: list[str]) -> None:
    found = extract([user(t) for t in texts])
    for item in found:
        assert memory_draft_violations(item.draft()) == []
    keys = [e.key for e in found if e.key]
    assert len(keys) == len(set(keys))
    assert found == extract([user(t) for t in texts])
