"""The trajectories' projection: a PCA of every layer's hidden states, fitted on every token
once so that the layers' frames compare."""

from __future__ import annotations

from pydantic import BaseModel, Field

from attnviz.capture.fields.base import (
    Ask,
    Members,
    Pick,
    Shape,
    TraceField,
    TraceSource,
    Want,
    register,
)
from attnviz.engine.analysis import PCA, trajectory_pca


class Projection(BaseModel):
    """PCA of every hidden state of every layer, fitted once so that frames are comparable."""

    components: int = Field(description="k, 1 to 3")
    mean: list[float] = Field(description="[d] the mean that was subtracted")
    axes: list[list[float]] = Field(description="[k][d] unit principal directions")
    explained_variance_ratio: list[float] = Field(description="[k]")
    coords: list[list[list[float]]] = Field(description="[layers+1][n][k]")


class ProjectionMeta(Members):
    """projection: the trajectories' PCA."""

    components: int = Field(description="Principal components kept")


def projection(source: TraceSource) -> PCA:
    """One PCA of every layer's hidden states together, so that frames are comparable; a remote
    model's whose states stay where it runs, made there (``reduce.principal_axes``, the same
    numbers). Kept with the trace."""
    source.bring([Want("pca")])
    kept = source.derived("projection")
    if kept is not None:
        return kept
    return source.memo("projection", lambda: trajectory_pca(source.hidden_states()))


def _numbers(ask: Ask, shape: Shape) -> int:
    if shape.width == 3:  # the page draws the three named axes themselves
        return 0
    return (shape.layers + 1) * shape.rows * 3 + 4 * shape.width + 3


def _projection(pick: Pick) -> dict | None:
    """Under the token options coords are the rows' points: the special tokens left out, a
    word the mean of its pieces."""
    source, tv = pick.source, pick.view
    if source.states.shape[-1] == 3:
        return None
    pca = projection(source)
    return {
        "components": pca.axes.shape[0],
        "mean": pca.mean,
        "axes": pca.axes,
        "explained_variance_ratio": pca.explained_variance_ratio,
        "coords": pca.coords if tv is None else tv.mean_points(pca.coords),
    }


register(
    TraceField(
        "projection",
        "PCA of the trajectories when d != 3",
        _numbers,
        _projection,
        params=("hide_special", "merge_words"),
        wire=Projection | None,
        members=ProjectionMeta,
        words="trajectories",
        wants=lambda pick: [] if pick.source.states.shape[-1] == 3 else [Want("pca")],
    )
)
