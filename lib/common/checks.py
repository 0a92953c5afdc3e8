"""Input validation helpers: errors name the argument, the expected and the received
value.

Every helper raises ``TypeError`` (wrong kind of value) or ``ValueError`` (right kind,
bad value) with a message that starts with the argument's name, so a caller sees at once
*which* input was wrong. They are meant for the public boundary of a function (and a
``Config.__post_init__``), called once per call: tensor checks that read values
(``finite``, ``nonnegative``) synchronise with the device.
"""

from __future__ import annotations

import math
import numbers

import torch


def _is_real(value) -> bool:
    return not isinstance(value, bool) and isinstance(value, numbers.Real)


def check_int(name: str, value, minimum: int | None = None) -> int:
    """Check that ``value`` is an int (not bool) and at least ``minimum``; return it."""
    if isinstance(value, bool) or not isinstance(value, numbers.Integral):
        raise TypeError(
            f"{name}: expected an int, got {type(value).__name__} ({value!r})"
        )
    if minimum is not None and value < minimum:
        raise ValueError(f"{name}: expected an int >= {minimum}, got {value}")
    return int(value)


def check_positive(name: str, value) -> float:
    """Check that ``value`` is a finite real number > 0; return it as a float."""
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        raise TypeError(
            f"{name}: expected a positive number, got {type(value).__name__} "
            f"({value!r})"
        )
    if not (value > 0) or value == float("inf"):
        raise ValueError(f"{name}: expected a finite number > 0, got {value}")
    return float(value)


def check_probability(name: str, value) -> float:
    """Check that ``value`` is a real number in [0, 1]; return it as a float."""
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        raise TypeError(
            f"{name}: expected a number in [0, 1], got {type(value).__name__} "
            f"({value!r})"
        )
    if not 0.0 <= value <= 1.0:
        raise ValueError(f"{name}: expected a number in [0, 1], got {value}")
    return float(value)


def check_finite(name: str, value) -> float:
    """Check that ``value`` is a finite real number (any sign); return it as a float."""
    if not _is_real(value):
        raise TypeError(
            f"{name}: expected a finite number, got {type(value).__name__} ({value!r})"
        )
    if not math.isfinite(value):
        raise ValueError(f"{name}: expected a finite number, got {value}")
    return float(value)


def check_nonnegative(name: str, value) -> float:
    """Check that ``value`` is a finite real number >= 0; return it as a float."""
    if not _is_real(value):
        raise TypeError(
            f"{name}: expected a number >= 0, got {type(value).__name__} ({value!r})"
        )
    if not (value >= 0) or not math.isfinite(value):
        raise ValueError(f"{name}: expected a finite number >= 0, got {value}")
    return float(value)


def check_range(name: str, value, low: float, high: float) -> float:
    """Check that ``value`` is a real number in [low, high]; return it as a float."""
    if not _is_real(value):
        raise TypeError(
            f"{name}: expected a number in [{low:g}, {high:g}], got "
            f"{type(value).__name__} ({value!r})"
        )
    if not low <= value <= high:
        raise ValueError(
            f"{name}: expected a number in [{low:g}, {high:g}], got {value}"
        )
    return float(value)


def check_bool(name: str, value) -> bool:
    """Check that ``value`` is a bool (numpy / torch booleans included); return it."""
    if isinstance(value, bool):
        return value
    if type(value).__name__ in ("bool_", "bool") and hasattr(
        value, "item"
    ):  # numpy.bool_
        return bool(value)
    raise TypeError(
        f"{name}: expected True or False, got {type(value).__name__} ({value!r})"
    )


def check_choice(name: str, value, choices) -> str:
    """Check that ``value`` is one of ``choices`` (option names); return it."""
    choices = tuple(choices)
    try:
        ok = value in choices
    except TypeError:  # an unhashable value in a dict's keys
        ok = False
    if not ok:
        if not isinstance(value, str) and all(isinstance(c, str) for c in choices):
            raise TypeError(
                f"{name}: expected one of {choices}, got {type(value).__name__} "
                f"({value!r})"
            )
        raise ValueError(f"{name}: expected one of {choices}, got {value!r}")
    return value


def check_instance(name: str, value, cls, what: str | None = None):
    """Check that ``value`` is an instance of ``cls`` (a class or a tuple of classes);
    return it."""
    if not isinstance(value, cls):
        if what is None:
            names = cls if isinstance(cls, tuple) else (cls,)
            what = " or ".join(c.__name__ for c in names)
        raise TypeError(f"{name}: expected {what}, got {type(value).__name__}")
    return value


def check_record(name: str, value, keys, what: str) -> dict:
    """Check that ``value`` is a dict with every key of ``keys`` (the record ``what``
    that another function returns); return it."""
    if not isinstance(value, dict):
        raise TypeError(f"{name}: expected {what}, got {type(value).__name__}")
    missing = [k for k in keys if k not in value]
    if missing:
        raise ValueError(f"{name}: expected {what}, got a dict without {missing}")
    return value


def check_generator(name: str, value, allow_none: bool = True):
    """Check that ``value`` is a ``torch.Generator`` (or ``None`` when allowed); return
    it."""
    if value is None and allow_none:
        return value
    if not isinstance(value, torch.Generator):
        raise TypeError(
            f"{name}: expected a torch.Generator{' or None' if allow_none else ''}, "
            f"got {type(value).__name__}"
        )
    return value


def check_numbers(
    name: str, values, check=check_finite, allow_empty: bool = False
) -> tuple:
    """Check a list / tuple of numbers element by element with ``check`` (e.g.
    :func:`check_positive`); return them as a tuple of floats."""
    if isinstance(values, (str, bytes)) or not isinstance(values, (list, tuple)):
        raise TypeError(
            f"{name}: expected a list or tuple of numbers, got "
            f"{type(values).__name__} ({values!r})"
        )
    if not values and not allow_empty:
        raise ValueError(
            f"{name}: expected at least one value, got an empty {type(values).__name__}"
        )
    return tuple(check(f"{name}[{i}]", v) for i, v in enumerate(values))


def check_tensor(
    name: str,
    value,
    ndim: int | None = None,
    shape: tuple | None = None,
    floating: bool = False,
    finite: bool = False,
    nonempty: bool = False,
    integer: bool = False,
) -> torch.Tensor:
    """Check that ``value`` is a tensor with ``ndim`` dims / ``shape`` (``None`` entries
    are free).

    ``floating``: a floating-point dtype; ``integer``: an integer dtype (index tensors;
    bool is not); ``nonempty``: at least one element; ``finite``: no NaN or ±inf (reads
    the values: one device sync).
    """
    if not isinstance(value, torch.Tensor):
        raise TypeError(f"{name}: expected a torch.Tensor, got {type(value).__name__}")
    if ndim is not None and value.ndim != ndim:
        raise ValueError(
            f"{name}: expected {ndim} dimensions, got shape {tuple(value.shape)}"
        )
    if shape is not None:
        if value.ndim != len(shape) or any(
            s is not None and s != v for s, v in zip(shape, value.shape)
        ):
            want = "(" + ", ".join("*" if s is None else str(s) for s in shape) + ")"
            raise ValueError(f"{name}: expected shape {want}, got {tuple(value.shape)}")
    if floating and not value.is_floating_point():
        raise TypeError(
            f"{name}: expected a floating-point tensor, got dtype {value.dtype}"
        )
    if integer and (
        value.is_floating_point() or value.is_complex() or value.dtype == torch.bool
    ):
        raise TypeError(
            f"{name}: expected an integer tensor (indices), got dtype {value.dtype}"
        )
    if nonempty and value.numel() == 0:
        raise ValueError(
            f"{name}: expected a non-empty tensor, got shape {tuple(value.shape)}"
        )
    if (
        finite
        and value.numel()
        and (value.is_floating_point() or value.is_complex())
        and not bool(torch.isfinite(value).all())
    ):
        bad = "NaN" if bool(torch.isnan(value).any()) else "inf"
        raise ValueError(f"{name}: expected finite values, got {bad}")
    return value
