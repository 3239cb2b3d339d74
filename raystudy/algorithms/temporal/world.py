"""A generated temporal world: entities, relations whose values change by year, and facts.

E entities with pseudo-word names, R relations, each with a vocabulary of V value names,
years ``y0 .. y0 + T - 1``. ``value(e, r, y0)`` is uniform over the vocabulary; each later
year it changes with probability ``p_change`` to a different value. Only (e, r) pairs
with at least ``min_distinct`` distinct values in the window are kept (KairosQA's
``filter_subject_dict`` rule, >= 3 distinct answers). Every entity also has one
time-invariant fact (``place``), the "common knowledge" control. Popularity weights
(Zipf over a seeded entity ranking) play KairosQA's ``subject_rank``.

Shapes: ``values`` is ``E x R x T`` value indices into ``vocab[r]``; ``kept`` is the list
of kept (e, r) pairs.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

RELATIONS = ("coach", "mayor", "owner", "chair", "leader", "sponsor", "keeper", "head")
_ONSETS = ("b", "br", "d", "dr", "f", "g", "k", "kr", "l", "m", "n", "p", "r", "s", "st",
           "t", "tr", "v", "z")
_VOWELS = ("a", "e", "i", "o", "u", "ai", "ou")
_CODAS = ("", "", "n", "r", "s", "l", "x")


def pseudo_words(n: int, rng: np.random.Generator, syllables: tuple[int, int] = (2, 3)
                 ) -> list[str]:
    """``n`` distinct capitalised pseudo-words from a seeded syllable generator."""
    out: list[str] = []
    seen: set[str] = set()
    while len(out) < n:
        k = int(rng.integers(syllables[0], syllables[1] + 1))
        word = "".join(_ONSETS[rng.integers(len(_ONSETS))] + _VOWELS[rng.integers(len(_VOWELS))]
                       for _ in range(k)) + _CODAS[rng.integers(len(_CODAS))]
        word = word.capitalize()
        if word not in seen:
            seen.add(word)
            out.append(word)
    return out


@dataclass(frozen=True)
class World:
    entities: list[str]
    relations: list[str]
    vocab: list[list[str]]
    """Value names per relation (R lists of V)."""
    places: list[str]
    invariant: np.ndarray
    """E: each entity's place index (time-invariant)."""
    years: list[int]
    values: np.ndarray
    """E x R x T value indices."""
    kept: list[tuple[int, int]]
    """(e, r) pairs with >= min_distinct distinct values over the years."""
    popularity: np.ndarray
    """E weights summing to 1 (Zipf over a seeded ranking; uniform when zipf = 0)."""

    def value(self, e: int, r: int, year: int) -> str:
        return self.vocab[r][int(self.values[e, r, self.years.index(year)])]

    def latest(self, e: int, r: int) -> str:
        return self.vocab[r][int(self.values[e, r, -1])]

    def last_year_of(self, e: int, r: int, name: str) -> int:
        """The latest year in which (e, r) had the value ``name`` (-1: never)."""
        held = [y for y in self.years if self.value(e, r, y) == name]
        return held[-1] if held else -1


def make_world(n_entities: int = 16, n_relations: int = 2, first_year: int = 2020,
               n_years: int = 6, n_values: int = 12, p_change: float = 0.6,
               min_distinct: int = 3, n_places: int = 8, zipf: float = 0.0,
               seed: int = 0) -> World:
    """Draw a world (see the module docstring); raises ValueError when no pair is kept."""
    if not 1 <= n_relations <= len(RELATIONS):
        raise ValueError(f"n_relations must be in 1..{len(RELATIONS)}, got {n_relations}")
    if n_values < min_distinct or n_years < min_distinct:
        raise ValueError(f"need n_values and n_years >= min_distinct={min_distinct}")
    rng = np.random.default_rng(seed)
    words = pseudo_words(n_entities + n_relations * n_values + n_places, rng)
    entities = words[:n_entities]
    vocab = [words[n_entities + r * n_values: n_entities + (r + 1) * n_values]
             for r in range(n_relations)]
    places = words[n_entities + n_relations * n_values:]
    values = np.zeros((n_entities, n_relations, n_years), dtype=np.int64)
    values[:, :, 0] = rng.integers(0, n_values, (n_entities, n_relations))
    for t in range(1, n_years):
        change = rng.random((n_entities, n_relations)) < p_change
        shift = rng.integers(1, n_values, (n_entities, n_relations))  # a different value
        values[:, :, t] = np.where(change, (values[:, :, t - 1] + shift) % n_values,
                                   values[:, :, t - 1])
    kept = [(e, r) for e in range(n_entities) for r in range(n_relations)
            if len(set(values[e, r].tolist())) >= min_distinct]
    if not kept:
        raise ValueError("no (entity, relation) pair has enough distinct values; raise "
                         "p_change or n_years")
    rank = rng.permutation(n_entities)
    weights = (rank + 1.0) ** -zipf
    return World(entities, list(RELATIONS[:n_relations]), vocab, places,
                 rng.integers(0, n_places, n_entities), list(range(first_year,
                 first_year + n_years)), values, kept, weights / weights.sum())
