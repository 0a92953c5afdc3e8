"""Small real knowledge graphs read from the ``pykeen`` wheel's package data.

The wheel ships UMLS, Nations and Kinships as tab-separated ``head relation tail``
files. We locate the folder with :func:`importlib.util.find_spec` and read the text
files only: pykeen itself (and its dependencies) is never imported, and nothing is
downloaded.
"""

from __future__ import annotations

import dataclasses
import importlib.util
import pathlib

import torch

from lib.common import check_choice, check_int, check_numbers, check_tensor

DATASETS = ("umls", "nations", "kinships")


@dataclasses.dataclass(frozen=True)
class KG:
    """A knowledge graph as id triples: ``train``/``valid``/``test`` are (m, 3) long
    tensors of (head, relation, tail) ids."""

    name: str
    entities: tuple
    relations: tuple
    train: torch.Tensor
    valid: torch.Tensor
    test: torch.Tensor

    @property
    def n_entities(self) -> int:
        return len(self.entities)

    @property
    def n_relations(self) -> int:
        return len(self.relations)


def dataset_dir(name: str) -> pathlib.Path:
    """The folder of ``name``'s TSV files inside the installed pykeen wheel."""
    name = check_choice("name", name, DATASETS)
    spec = importlib.util.find_spec("pykeen")  # locates the package, runs none of it
    if spec is None or spec.origin is None:
        raise ModuleNotFoundError(
            "pykeen: the knowledge graphs ship in the pykeen wheel; install it with "
            "`pip install --no-deps pykeen==1.11.1` (make setup does)"
        )
    return pathlib.Path(spec.origin).parent / "datasets" / name


def _read(path: pathlib.Path) -> list:
    rows = []
    for line in path.read_text().splitlines():
        if line.strip():
            h, r, t = line.split("\t")
            rows.append((h, r, t))
    return rows


def load_kg(name: str = "umls") -> KG:
    """Read ``name`` (one of :data:`DATASETS`); ids follow sorted names."""
    folder = dataset_dir(name)
    splits = {s: _read(folder / f"{s}.txt") for s in ("train", "valid", "test")}
    rows = [r for s in splits.values() for r in s]
    ents = tuple(sorted({h for h, _, _ in rows} | {t for _, _, t in rows}))
    rels = tuple(sorted({r for _, r, _ in rows}))
    e_id = {e: i for i, e in enumerate(ents)}
    r_id = {r: i for i, r in enumerate(rels)}

    def ids(split):
        return torch.tensor(
            [(e_id[h], r_id[r], e_id[t]) for h, r, t in split], dtype=torch.long
        ).reshape(-1, 3)

    return KG(name, ents, rels, *(ids(splits[s]) for s in ("train", "valid", "test")))


# ---------------------------------------------------------------- input checks
def _check_shape(name: str, shape, length: int | None = 3) -> tuple:
    """A latent shape: a tuple of ``length`` positive ints ((C, h, w) by default)."""
    shape = check_numbers(name, shape, lambda n, v: check_int(n, v, 1))
    if length is not None and len(shape) != length:
        raise ValueError(f"{name}: expected {length} sizes, got {shape}")
    return shape


def _check_ids(name: str, ids: torch.Tensor, n: int, what: str = "ids"):
    """Every entry of the integer tensor ``ids`` in [0, n) (reads the values)."""
    if ids.numel() and (int(ids.min()) < 0 or int(ids.max()) >= n):
        raise ValueError(
            f"{name}: expected {what} in [0, {n}), got {int(ids.min())}.."
            f"{int(ids.max())}"
        )


def _check_triples(name: str, triples, n: int | None = None, n_relations=None):
    """(m, 3) integer (head, relation, tail) ids; with ``n`` given, also their ranges
    (entities in [0, n), relations in [0, n_relations) or >= 0; reads the values)."""
    check_tensor(name, triples, shape=(None, 3), integer=True)
    if n is None or not triples.numel():
        return
    _check_ids(name, triples[:, [0, 2]], n, "entity ids")
    if n_relations is not None:
        _check_ids(name, triples[:, 1], n_relations, "relation ids")
    elif int(triples[:, 1].min()) < 0:
        raise ValueError(
            f"{name}: expected relation ids >= 0, got {int(triples[:, 1].min())}"
        )
