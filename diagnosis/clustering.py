"""Clustering of failed episodes' feature rows with scikit-learn.

Episodes with equal features are one row with a weight, so the work grows with the number of
distinct behaviours, not with the number of episodes. ``auto`` runs average-linkage agglomerative
clustering with a cosine distance threshold on (a weighted sample of) the distinct rows and assigns
the rest to the nearest cluster centroid; ``hdbscan`` and ``kmeans`` are kept for comparison
(bench/bench_diagnosis_scale.py measures all three).

scikit-learn is imported where it clusters, not with the package: commands that only read reports (``gymloop
campaigns``, ``report``) start a second sooner.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Literal

import numpy as np
from numpy.typing import NDArray

from diagnosis.features import Signature

Method = Literal["auto", "agglomerative", "hdbscan", "kmeans"]
METHODS: tuple[str, ...] = ("auto", "agglomerative", "hdbscan", "kmeans")

DISTANCE_THRESHOLD = 0.5
"""Cosine distance at which agglomerative clustering stops merging."""

MAX_EXACT_ROWS = 2000
"""Distinct rows clustered directly; beyond it a weighted sample is clustered and the rest assigned."""


@dataclass
class ClusterResult:
    """Cluster labels of the distinct rows and how they were found.

    Attributes:
        labels: Cluster number of each distinct row (0..k-1).
        matrix: The L2-normalised feature rows.
        feature_names: Column names of ``matrix``.
        params: Algorithm and parameters, for the report.
    """

    labels: NDArray[np.int64]
    matrix: Any
    feature_names: list[str]
    params: dict[str, Any] = field(default_factory=dict)


def vectorize(rows: list[Signature]) -> tuple[Any, list[str]]:
    """Turn feature signatures into an L2-normalised sparse matrix and its column names."""
    from sklearn.feature_extraction import DictVectorizer
    from sklearn.preprocessing import normalize

    vectorizer = DictVectorizer(sparse=True, sort=True)
    matrix = vectorizer.fit_transform([dict(r) for r in rows])
    return normalize(matrix), [str(n) for n in vectorizer.get_feature_names_out()]


def _sample(weights: NDArray[np.float64], size: int, seed: int) -> NDArray[np.int64]:
    if len(weights) <= size:
        return np.arange(len(weights))
    rng = np.random.default_rng(seed)
    chosen = rng.choice(len(weights), size=size, replace=False, p=weights / weights.sum())
    return np.sort(chosen).astype(np.int64)


def _agglomerate(dense: NDArray[np.float64], threshold: float) -> NDArray[np.int64]:
    if len(dense) < 2:
        return np.zeros(len(dense), dtype=np.int64)
    from sklearn.cluster import AgglomerativeClustering

    model = AgglomerativeClustering(n_clusters=None, distance_threshold=threshold, metric="cosine", linkage="average")
    return np.asarray(model.fit_predict(dense), dtype=np.int64)


def _assign(matrix: Any, sample_dense: NDArray[np.float64], sample_labels: NDArray[np.int64],
            sample_weights: NDArray[np.float64]) -> NDArray[np.int64]:
    """Give every row the cluster whose weighted centroid is nearest in cosine (``matrix`` may be sparse)."""
    from sklearn.preprocessing import normalize

    k = int(sample_labels.max()) + 1
    centroids = np.zeros((k, sample_dense.shape[1]))
    for c in range(k):
        members = sample_labels == c
        centroids[c] = np.average(sample_dense[members], axis=0, weights=sample_weights[members])
    centroids = normalize(centroids)
    return np.asarray(np.argmax(np.asarray(matrix @ centroids.T), axis=1), dtype=np.int64)


def _relabel(labels: NDArray[np.int64], weights: NDArray[np.float64]) -> NDArray[np.int64]:
    """Number clusters by decreasing weight (ties by first row), so labels are stable across methods."""
    sizes: dict[int, float] = {}
    first: dict[int, int] = {}
    for i, (label, w) in enumerate(zip(labels.tolist(), weights.tolist(), strict=True)):
        sizes[label] = sizes.get(label, 0.0) + w
        first.setdefault(label, i)
    order = sorted(sizes, key=lambda c: (-sizes[c], first[c]))
    mapping = {old: new for new, old in enumerate(order)}
    return np.asarray([mapping[x] for x in labels.tolist()], dtype=np.int64)


def cluster_rows(
    rows: list[Signature],
    weights: list[int],
    *,
    method: Method = "auto",
    seed: int = 0,
    threshold: float = DISTANCE_THRESHOLD,
    max_rows: int = MAX_EXACT_ROWS,
) -> ClusterResult:
    """Cluster distinct feature rows, each standing for ``weights[i]`` episodes.

    Args:
        rows: Distinct feature signatures.
        weights: Episodes per signature.
        method: ``auto`` (or ``agglomerative``), ``hdbscan`` or ``kmeans`` (k from the agglomerative estimate).
        seed: Seed of the sampling and of k-means.
        threshold: Cosine distance threshold of agglomerative clustering.
        max_rows: Distinct rows clustered directly before sampling.

    Raises:
        ValueError: Unknown method, or rows and weights of different lengths.
    """
    if method not in METHODS:
        raise ValueError(f"unknown clustering method {method!r}; choose one of {', '.join(METHODS)}")
    if len(rows) != len(weights):
        raise ValueError(f"{len(rows)} rows but {len(weights)} weights")
    if not rows:
        return ClusterResult(np.zeros(0, dtype=np.int64), None, [], {"method": method})
    matrix, names = vectorize(rows)
    w = np.asarray(weights, dtype=np.float64)
    sample = _sample(w, max_rows, seed)
    sample_dense = np.asarray(matrix[sample].toarray(), dtype=np.float64)
    params: dict[str, Any] = {"method": method, "distinct_rows": len(rows), "sampled_rows": int(len(sample))}
    if method == "hdbscan":
        labels = _hdbscan(matrix, sample_dense, w, sample)
    else:
        sample_labels = _agglomerate(sample_dense, threshold)
        labels = (sample_labels if len(sample) == len(rows)
                  else _assign(matrix, sample_dense, sample_labels, w[sample]))
        params["threshold"] = threshold
        if method == "kmeans":
            from sklearn.cluster import MiniBatchKMeans

            k = int(labels.max()) + 1
            model = MiniBatchKMeans(n_clusters=k, random_state=seed, n_init=3, batch_size=1024)
            labels = np.asarray(model.fit_predict(matrix, sample_weight=w), dtype=np.int64)
            params["k"] = k
    labels = _relabel(labels, w)
    params["clusters"] = int(labels.max()) + 1
    return ClusterResult(labels, matrix, names, params)


def _hdbscan(matrix: Any, sample_dense: NDArray[np.float64], w: NDArray[np.float64],
             sample: NDArray[np.int64]) -> NDArray[np.int64]:
    """HDBSCAN over the sampled rows repeated by weight (capped), noise then assigned to the nearest cluster."""
    cap = max(1, 4000 // max(1, len(sample)))
    reps = np.minimum(w[sample], cap).astype(np.int64)
    points = np.repeat(sample_dense, reps, axis=0)
    owner = np.repeat(np.arange(len(sample)), reps)
    from sklearn.cluster import HDBSCAN

    found = HDBSCAN(min_cluster_size=5, copy=True).fit_predict(points)
    sample_labels = np.full(len(sample), -1, dtype=np.int64)
    for i in range(len(sample)):
        votes = found[owner == i]
        votes = votes[votes >= 0]
        if len(votes):
            sample_labels[i] = int(np.bincount(votes).argmax())
    if (sample_labels < 0).all():
        return np.zeros(matrix.shape[0], dtype=np.int64)
    known = sample_labels >= 0
    _, compact = np.unique(sample_labels[known], return_inverse=True)
    return _assign(matrix, sample_dense[known], compact.astype(np.int64), w[sample][known])
