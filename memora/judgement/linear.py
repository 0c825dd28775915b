"""A small softmax (multinomial logistic) regression in numpy, optionally behind one hidden
layer: training and inference.

Full-batch Adam in float64 with a fixed number of steps, from zero weights (or, for the hidden
layer, from a fixed-seed draw), so the same data and the same vectors give the same weights on
every run.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from memora.errors import ConfigurationError


@dataclass(frozen=True)
class SoftmaxModel:
    """Weights of one trained decision and what they expect as input."""

    labels: tuple[str, ...]
    """Class names, in the order of the weight columns."""
    weights: np.ndarray
    """(features, classes) matrix."""
    bias: np.ndarray
    """(classes,) vector."""
    mean: np.ndarray
    """Feature means the inputs are centred with."""
    scale: np.ndarray
    """Feature scales the inputs are divided by."""
    encoder_id: str
    """The sentence encoder the weights were trained on."""
    hidden: tuple[np.ndarray, np.ndarray] | None = None
    """(features, units) weights and (units,) bias of a ReLU layer before the softmax, if any;
    ``weights`` then reads the units."""

    def probabilities(self, features: np.ndarray) -> np.ndarray:
        """(rows, classes) class probabilities for (rows, features) inputs."""
        x = (np.atleast_2d(features).astype(np.float64) - self.mean) / self.scale
        if self.hidden is not None:
            x = np.maximum(x @ self.hidden[0] + self.hidden[1], 0.0)
        logits = x @ self.weights + self.bias
        logits -= logits.max(axis=1, keepdims=True)
        exp = np.exp(logits)
        return exp / exp.sum(axis=1, keepdims=True)

    def save(self, path: Path) -> None:
        """Write the model as one ``.npz`` file."""
        path.parent.mkdir(parents=True, exist_ok=True)
        np.savez(path, **self.arrays())

    def arrays(self, prefix: str = "") -> dict[str, Any]:
        """The model's arrays as :meth:`save` writes them, each name led by ``prefix``."""
        arrays: dict[str, Any] = {
            "labels": np.asarray(self.labels),
            "weights": self.weights.astype(np.float32),
            "bias": self.bias.astype(np.float32),
            "mean": self.mean.astype(np.float32),
            "scale": self.scale.astype(np.float32),
            "encoder_id": np.asarray(self.encoder_id),
        }
        if self.hidden is not None:
            arrays["hidden_weights"] = self.hidden[0].astype(np.float32)
            arrays["hidden_bias"] = self.hidden[1].astype(np.float32)
        return {prefix + name: array for name, array in arrays.items()}

    @classmethod
    def load(cls, path: Path) -> SoftmaxModel:
        """Read a model written by :meth:`save`."""
        with np.load(path, allow_pickle=False) as data:
            return cls.from_arrays(data)

    @classmethod
    def from_arrays(cls, data: Any, prefix: str = "") -> SoftmaxModel:
        """The model whose arrays :meth:`arrays` named with ``prefix``."""
        hidden = None
        if prefix + "hidden_weights" in data:
            hidden = (
                data[prefix + "hidden_weights"].astype(np.float64),
                data[prefix + "hidden_bias"].astype(np.float64),
            )
        return cls(
            labels=tuple(str(label) for label in data[prefix + "labels"]),
            weights=data[prefix + "weights"].astype(np.float64),
            bias=data[prefix + "bias"].astype(np.float64),
            mean=data[prefix + "mean"].astype(np.float64),
            scale=data[prefix + "scale"].astype(np.float64),
            encoder_id=str(data[prefix + "encoder_id"]),
            hidden=hidden,
        )


@dataclass(frozen=True)
class Committee:
    """Models of one decision fitted on the same rows from different starting draws, read as
    the average of their probabilities. One hidden layer's draw decides much of how sure it is
    on pairs the corpora never showed it; the average is sure only where the members agree."""

    members: tuple[SoftmaxModel, ...]
    """The fitted models, alike in labels, encoder and inputs."""

    def __post_init__(self) -> None:
        if not self.members:
            raise ConfigurationError("a committee needs at least one member")
        first = self.members[0]
        for member in self.members[1:]:
            if member.labels != first.labels or member.encoder_id != first.encoder_id:
                raise ConfigurationError("the members of a committee must share labels and encoder")

    @property
    def labels(self) -> tuple[str, ...]:
        """Class names, in the order of the probability columns."""
        return self.members[0].labels

    @property
    def encoder_id(self) -> str:
        """The sentence encoder the members were trained on."""
        return self.members[0].encoder_id

    def probabilities(self, features: np.ndarray) -> np.ndarray:
        """(rows, classes) average class probabilities of the members."""
        return np.mean([member.probabilities(features) for member in self.members], axis=0)

    def save(self, path: Path) -> None:
        """Write every member into one ``.npz`` file."""
        path.parent.mkdir(parents=True, exist_ok=True)
        arrays: dict[str, Any] = {"members": np.asarray(len(self.members))}
        for i, member in enumerate(self.members):
            arrays |= member.arrays(f"member{i}_")
        np.savez(path, **arrays)


Decision = SoftmaxModel | Committee
"""The weights of one trained decision: one model, or a committee of them."""


def load_decision(path: Path) -> Decision:
    """Read a model or a committee written by its ``save``."""
    with np.load(path, allow_pickle=False) as data:
        if "members" not in data:
            return SoftmaxModel.from_arrays(data)
        count = int(data["members"])
        return Committee(tuple(SoftmaxModel.from_arrays(data, f"member{i}_") for i in range(count)))


@dataclass(frozen=True)
class _Standardised:
    """Training inputs centred and scaled, with one-hot targets and normalised row weights."""

    x: np.ndarray
    mean: np.ndarray
    scale: np.ndarray
    onehot: np.ndarray
    row_weight: np.ndarray


def _standardise(
    features: np.ndarray, targets: np.ndarray, classes: int, class_weights: np.ndarray | None
) -> _Standardised:
    x = features.astype(np.float64)
    mean = x.mean(axis=0)
    scale = x.std(axis=0) + 1e-6
    x = (x - mean) / scale
    rows = x.shape[0]
    onehot = np.zeros((rows, classes))
    onehot[np.arange(rows), targets] = 1.0
    row_weight = np.ones(rows) if class_weights is None else class_weights[targets]
    return _Standardised(x, mean, scale, onehot, row_weight / row_weight.sum())


def _softmax_error(logits: np.ndarray, data: _Standardised) -> np.ndarray:
    """The weighted cross-entropy gradient at the logits."""
    logits -= logits.max(axis=1, keepdims=True)
    exp = np.exp(logits)
    probs = exp / exp.sum(axis=1, keepdims=True)
    return (probs - data.onehot) * data.row_weight[:, None]


def _adam(
    params: list[np.ndarray],
    gradients: Callable[[list[np.ndarray]], list[np.ndarray]],
    steps: int,
    learning_rate: float,
) -> None:
    """Full-batch Adam, updating ``params`` in place."""
    moments = [np.zeros_like(p) for p in params]
    squares = [np.zeros_like(p) for p in params]
    beta1, beta2 = 0.9, 0.999
    for step in range(1, steps + 1):
        for i, grad in enumerate(gradients(params)):
            moments[i] = beta1 * moments[i] + (1 - beta1) * grad
            squares[i] = beta2 * squares[i] + (1 - beta2) * grad**2
            corrected = moments[i] / (1 - beta1**step)
            params[i] -= (
                learning_rate * corrected / (np.sqrt(squares[i] / (1 - beta2**step)) + 1e-8)
            )


def train_softmax(
    features: np.ndarray,
    targets: np.ndarray,
    labels: tuple[str, ...],
    encoder_id: str,
    *,
    l2: float = 1e-3,
    steps: int = 400,
    learning_rate: float = 0.01,
    class_weights: np.ndarray | None = None,
) -> SoftmaxModel:
    """Fit weights to (rows, features) inputs and integer class ``targets``."""
    data = _standardise(features, targets, len(labels), class_weights)

    def gradients(params: list[np.ndarray]) -> list[np.ndarray]:
        weights, bias = params
        error = _softmax_error(data.x @ weights + bias, data)
        return [data.x.T @ error + l2 * weights, error.sum(axis=0)]

    params = [np.zeros((data.x.shape[1], len(labels))), np.zeros(len(labels))]
    _adam(params, gradients, steps, learning_rate)
    return SoftmaxModel(labels, params[0], params[1], data.mean, data.scale, encoder_id)


def train_hidden(
    features: np.ndarray,
    targets: np.ndarray,
    labels: tuple[str, ...],
    encoder_id: str,
    *,
    units: int = 64,
    l2: float = 1e-3,
    steps: int = 300,
    learning_rate: float = 0.005,
    class_weights: np.ndarray | None = None,
    seed: int = 0,
) -> SoftmaxModel:
    """Fit one ReLU layer of ``units`` and a softmax over it (pairs of sentences need the
    interactions a linear model cannot draw: the same template with another date is another
    event, with another value is an update)."""
    data = _standardise(features, targets, len(labels), class_weights)
    width, classes = data.x.shape[1], len(labels)

    def gradients(params: list[np.ndarray]) -> list[np.ndarray]:
        w1, b1, w2, b2 = params
        pre = data.x @ w1 + b1
        act = np.maximum(pre, 0.0)
        error = _softmax_error(act @ w2 + b2, data)
        back = (error @ w2.T) * (pre > 0)
        return [
            data.x.T @ back + l2 * w1,
            back.sum(axis=0),
            act.T @ error + l2 * w2,
            error.sum(axis=0),
        ]

    rng = np.random.default_rng(seed)
    params = [
        rng.normal(0.0, np.sqrt(2.0 / width), (width, units)),
        np.zeros(units),
        rng.normal(0.0, np.sqrt(1.0 / units), (units, classes)),
        np.zeros(classes),
    ]
    _adam(params, gradients, steps, learning_rate)
    w1, b1, w2, b2 = params
    return SoftmaxModel(labels, w2, b2, data.mean, data.scale, encoder_id, hidden=(w1, b1))


def train_committee(
    features: np.ndarray,
    targets: np.ndarray,
    labels: tuple[str, ...],
    encoder_id: str,
    *,
    seeds: tuple[int, ...] = (0, 1, 2),
    **options: Any,
) -> Committee:
    """Fit :func:`train_hidden` once per seed of ``seeds``."""
    return Committee(
        tuple(
            train_hidden(features, targets, labels, encoder_id, seed=seed, **options)
            for seed in seeds
        )
    )
