"""Input validation helpers: errors name the argument, the expected and the received value."""
from __future__ import annotations

import numbers

import torch


def check_int(name: str, value, minimum: int | None = None) -> int:
    """Check that ``value`` is an int (not bool) and at least ``minimum``; return it."""
    if isinstance(value, bool) or not isinstance(value, numbers.Integral):
        raise TypeError(f"{name}: expected an int, got {type(value).__name__} ({value!r})")
    if minimum is not None and value < minimum:
        raise ValueError(f"{name}: expected an int >= {minimum}, got {value}")
    return int(value)


def check_positive(name: str, value) -> float:
    """Check that ``value`` is a finite real number > 0; return it as a float."""
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        raise TypeError(f"{name}: expected a positive number, got {type(value).__name__} ({value!r})")
    if not (value > 0) or value == float("inf"):
        raise ValueError(f"{name}: expected a finite number > 0, got {value}")
    return float(value)


def check_probability(name: str, value) -> float:
    """Check that ``value`` is a real number in [0, 1]; return it as a float."""
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        raise TypeError(f"{name}: expected a number in [0, 1], got {type(value).__name__} ({value!r})")
    if not 0.0 <= value <= 1.0:
        raise ValueError(f"{name}: expected a number in [0, 1], got {value}")
    return float(value)


def check_tensor(name: str, value, ndim: int | None = None, shape: tuple | None = None,
                 floating: bool = False) -> torch.Tensor:
    """Check that ``value`` is a tensor with ``ndim`` dims / ``shape`` (``None`` entries are free)."""
    if not isinstance(value, torch.Tensor):
        raise TypeError(f"{name}: expected a torch.Tensor, got {type(value).__name__}")
    if ndim is not None and value.ndim != ndim:
        raise ValueError(f"{name}: expected {ndim} dimensions, got shape {tuple(value.shape)}")
    if shape is not None:
        if value.ndim != len(shape) or any(s is not None and s != v for s, v in zip(shape, value.shape)):
            want = "(" + ", ".join("*" if s is None else str(s) for s in shape) + ")"
            raise ValueError(f"{name}: expected shape {want}, got {tuple(value.shape)}")
    if floating and not value.is_floating_point():
        raise TypeError(f"{name}: expected a floating-point tensor, got dtype {value.dtype}")
    return value
