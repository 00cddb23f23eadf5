"""The cross-entropy method for linear Tetris evaluators (Szita and Lorincz 2006;
Thiery and Scherrer 2009), as pure, seeded logic: ``ask`` for candidates,
``tell`` their scores.  Playing the games is the caller's job.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np


@dataclass
class CrossEntropy:
    """A Gaussian over weight vectors, narrowed each generation towards its elite.

    ``noise`` is added to the variance after each update and shrinks linearly
    to zero over ``noise_generations``: without it the distribution collapses
    on a lucky elite before the noisy scores (exponential game lengths) have
    been averaged out.
    """

    mean: np.ndarray
    std: np.ndarray
    population: int = 60
    elite_fraction: float = 0.2
    noise: float = 4.0
    noise_generations: int = 15
    seed: int = 0
    generation: int = 0
    rng: np.random.Generator = field(init=False)

    def __post_init__(self) -> None:
        self.mean = np.asarray(self.mean, dtype=np.float64).copy()
        self.std = np.asarray(self.std, dtype=np.float64).copy()
        if self.mean.shape != self.std.shape or self.mean.ndim != 1:
            raise ValueError("mean and std must be vectors of the same length")
        if self.population < 2:
            raise ValueError("population must be at least 2")
        if not 0 < self.elite_fraction <= 1:
            raise ValueError("elite_fraction must be in (0, 1]")
        self.rng = np.random.default_rng(self.seed)

    @property
    def elite_size(self) -> int:
        """How many of each generation shape the next one."""
        return max(1, int(round(self.population * self.elite_fraction)))

    def ask(self) -> np.ndarray:
        """This generation's candidates, one weight vector per row."""
        return self.mean + self.std * self.rng.standard_normal((self.population, self.mean.size))

    def tell(self, candidates: np.ndarray, scores: np.ndarray) -> np.ndarray:
        """Refit the distribution on the best-scoring candidates; returns the elite's indices."""
        scores = np.asarray(scores, dtype=np.float64)
        if len(scores) != len(candidates):
            raise ValueError("one score per candidate")
        elite = np.argsort(-scores, kind="stable")[: self.elite_size]
        chosen = candidates[elite]
        remaining = max(0.0, 1.0 - self.generation / self.noise_generations) if self.noise_generations else 0.0
        self.mean = chosen.mean(axis=0)
        self.std = np.sqrt(chosen.var(axis=0) + self.noise * remaining)
        self.generation += 1
        return elite
