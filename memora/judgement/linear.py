"""A small softmax (multinomial logistic) regression in numpy: training and inference.

Full-batch Adam from zero weights in float64 with a fixed number of steps, so the
same data and the same vectors give the same weights on every run.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import numpy as np


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

    def probabilities(self, features: np.ndarray) -> np.ndarray:
        """(rows, classes) class probabilities for (rows, features) inputs."""
        x = (np.atleast_2d(features).astype(np.float64) - self.mean) / self.scale
        logits = x @ self.weights + self.bias
        logits -= logits.max(axis=1, keepdims=True)
        exp = np.exp(logits)
        return exp / exp.sum(axis=1, keepdims=True)

    def save(self, path: Path) -> None:
        """Write the model as one ``.npz`` file."""
        path.parent.mkdir(parents=True, exist_ok=True)
        np.savez(
            path,
            labels=np.asarray(self.labels),
            weights=self.weights.astype(np.float32),
            bias=self.bias.astype(np.float32),
            mean=self.mean.astype(np.float32),
            scale=self.scale.astype(np.float32),
            encoder_id=np.asarray(self.encoder_id),
        )

    @classmethod
    def load(cls, path: Path) -> SoftmaxModel:
        """Read a model written by :meth:`save`."""
        with np.load(path, allow_pickle=False) as data:
            return cls(
                labels=tuple(str(label) for label in data["labels"]),
                weights=data["weights"].astype(np.float64),
                bias=data["bias"].astype(np.float64),
                mean=data["mean"].astype(np.float64),
                scale=data["scale"].astype(np.float64),
                encoder_id=str(data["encoder_id"]),
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
    x = features.astype(np.float64)
    mean = x.mean(axis=0)
    scale = x.std(axis=0) + 1e-6
    x = (x - mean) / scale
    rows, width = x.shape
    classes = len(labels)
    onehot = np.zeros((rows, classes))
    onehot[np.arange(rows), targets] = 1.0
    row_weight = np.ones(rows) if class_weights is None else class_weights[targets]
    row_weight = row_weight / row_weight.sum()
    weights = np.zeros((width, classes))
    bias = np.zeros(classes)
    moments = [np.zeros_like(weights), np.zeros_like(bias)]
    squares = [np.zeros_like(weights), np.zeros_like(bias)]
    beta1, beta2 = 0.9, 0.999
    for step in range(1, steps + 1):
        logits = x @ weights + bias
        logits -= logits.max(axis=1, keepdims=True)
        exp = np.exp(logits)
        probs = exp / exp.sum(axis=1, keepdims=True)
        error = (probs - onehot) * row_weight[:, None]
        grads = [x.T @ error + l2 * weights, error.sum(axis=0)]
        for i, (param, grad) in enumerate(zip((weights, bias), grads, strict=True)):
            moments[i] = beta1 * moments[i] + (1 - beta1) * grad
            squares[i] = beta2 * squares[i] + (1 - beta2) * grad**2
            corrected = moments[i] / (1 - beta1**step)
            param -= learning_rate * corrected / (np.sqrt(squares[i] / (1 - beta2**step)) + 1e-8)
    return SoftmaxModel(labels, weights, bias, mean, scale, encoder_id)
