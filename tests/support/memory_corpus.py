"""Realistic short memory texts and vectors, generated deterministically, for
the large recall tests and ``bench/recall.py``.

Sentences are facts about a user ("Usually orders green tea at Valora on
weekends") built from templates over a vocabulary of a few thousand words:
a few hundred English words plus made-up names of people, places and brands.
Some words are far more frequent than others, as in real text. Words of
``RESERVED`` never occur, so tests can plant entries only they contain.
"""

from __future__ import annotations

import math
import random
from collections.abc import Iterator

RESERVED = frozenset({"allergic", "peanut", "peanuts", "shellfish", "saxophone", "quokka"})

_VERBS = """likes loves prefers enjoys avoids orders visits reads watches plays cooks
buys collects drinks eats studies practices remembers plans books rents shares
repairs paints writes bakes grows follows uses needs wants misses""".split()
_ADJECTIVES = """green red old new small large quiet busy early late spicy sweet warm
cold fresh local vintage modern classic favourite cheap expensive slow fast short long
bright dark simple fancy healthy organic weekly daily""".split()
_NOUNS = """tea coffee bread cheese pasta rice soup salad fish chicken noodles pizza
cake chocolate wine beer juice water music jazz podcasts novels poetry films
series games chess tennis football running cycling swimming hiking yoga garden
flowers plants books records shoes jackets watches bikes cars trains flights hotels
museums concerts markets beaches mountains lakes rivers forests parks cafes
restaurants bakeries libraries theatres galleries emails meetings reports invoices
passwords phones laptops cameras keyboards""".split()
_TIMES = [
    "on weekends",
    "every morning",
    "after work",
    "at night",
    "on mondays",
    "in summer",
    "in winter",
    "before breakfast",
    "during holidays",
    "twice a week",
    "once a month",
    "on fridays",
]
_TEMPLATES = [
    "{Verb} {adjective} {noun} at {place} {time}",
    "Usually {verb} {noun} with {person} {time}",
    "{Person} recommended {adjective} {noun} from {brand}",
    "Has a {adjective} {noun} from {brand} and {verb} it {time}",
    "Lives near {place} and {verb} the {noun} there",
    "Wants to visit {place} with {person} to see the {noun}",
    "Works with {person} on {brand} {noun}",
    "{Verb} {noun} and {noun2} but not {adjective} {noun3}",
    "Birthday of {person} is in {month}; {verb} {noun}",
    "Moved from {place} to {place2} in {month}",
]
_MONTHS = """january february march april may june july august september october
november december""".split()
_ONSETS = "b c d f g h j k l m n p r s t v w z br cr dr fl gr kl pr st tr".split()
_VOWELS = "a e i o u ai ea io".split()
_CODAS = ["", "", "n", "r", "l", "s", "m", "x", "nd", "rt"]


def _made_up_words(rng: random.Random, count: int) -> list[str]:
    words: set[str] = set()
    while len(words) < count:
        syllables = rng.randint(2, 3)
        word = "".join(rng.choice(_ONSETS) + rng.choice(_VOWELS) for _ in range(syllables))
        word += rng.choice(_CODAS)
        if word not in RESERVED:
            words.add(word)
    return sorted(words)


class Corpus:
    """A deterministic generator of memory texts (see the module doc)."""

    def __init__(self, seed: int = 7, made_up_words: int = 3000) -> None:
        self._rng = random.Random(seed)
        names = [w.capitalize() for w in _made_up_words(self._rng, made_up_words)]
        third = len(names) // 3
        self.people, self.places, self.brands = (
            names[:third],
            names[third : 2 * third],
            names[2 * third :],
        )

    def _pick(self, words: list[str]) -> str:
        # Zipf-like: low indexes are much more frequent.
        index = int(len(words) ** self._rng.random()) - 1
        return words[max(0, min(index, len(words) - 1))]

    def sentence(self) -> str:
        template = self._rng.choice(_TEMPLATES)
        verb = self._pick(_VERBS)
        person = self._pick(self.people)
        text = template.format(
            Verb=verb.capitalize(),
            verb=verb,
            adjective=self._pick(_ADJECTIVES),
            noun=self._pick(_NOUNS),
            noun2=self._pick(_NOUNS),
            noun3=self._pick(_NOUNS),
            place=self._pick(self.places),
            place2=self._pick(self.places),
            person=person,
            Person=person,
            brand=self._pick(self.brands),
            time=self._rng.choice(_TIMES),
            month=self._rng.choice(_MONTHS),
        )
        return text

    def sentences(self, count: int) -> Iterator[str]:
        for _ in range(count):
            yield self.sentence()

    def vector(self, dimensions: int) -> list[float]:
        """A random direction (Gaussian components), unit length."""
        values = [self._rng.gauss(0.0, 1.0) for _ in range(dimensions)]
        length = math.hypot(*values) or 1.0
        return [v / length for v in values]
