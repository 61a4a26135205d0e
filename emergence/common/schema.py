"""Typed, strict parameter sections: dataclasses declared beside the code that reads them.

    @dataclass(frozen=True)
    class TrainArgs:
        steps: int = number(1, 10_000_000)
        lr: float = number(0.0, 10.0)
        compile: Literal["none", "default"] = "none"
        lr_override: float | None = number(0.0, 10.0, default=None)   # None = unset

`load(TrainArgs, mapping, "linear_map.train")` builds the section or raises ConfigError naming
the dotted key and the allowed values: unknown keys, missing keys, wrong types (a bool is
never a number), values out of range, NaN and infinities. A section may define
`check(self, key)` for rules that tie its fields together; the composed parameters run every
section's check, innermost first. Nothing here imports the rest of the package.
"""
from __future__ import annotations

import dataclasses
import math
import types
from typing import Any, Literal, Union, get_args, get_origin, get_type_hints


class ConfigError(ValueError):
    pass


def number(low: float | None = None, high: float | None = None, default: Any = dataclasses.MISSING,
           absent_when_none: bool = False):
    """A numeric field (or a list of numbers) allowed in [low, high]. `absent_when_none`: a key
    the YAML leaves out unless it is set (`to_params` omits it while None)."""
    return dataclasses.field(default=default, metadata={"low": low, "high": high, "absent_when_none": absent_when_none})


def unset(default: Any = None):
    """A non-numeric field the YAML leaves out unless it is set (`to_params` omits it while None)."""
    return dataclasses.field(default=default, metadata={"absent_when_none": True})


def _range(meta) -> str:
    low, high = meta.get("low"), meta.get("high")
    if low is None and high is None:
        return ""
    return f" in [{'-inf' if low is None else low}, {'inf' if high is None else high}]"


def describe(tp, meta=None) -> str:
    meta = meta or {}
    origin, args = get_origin(tp), get_args(tp)
    if origin is Literal:
        return "one of " + ", ".join(map(str, args))
    if origin in (Union, types.UnionType) and type(None) in args:
        (inner,) = [a for a in args if a is not type(None)]
        return f"{describe(inner, meta)} or null (unset)"
    if origin is list:
        return f"a list of {describe(args[0])}{_range(meta)}"
    if origin is dict:
        return f"a mapping of names to {describe(args[1])}"
    if dataclasses.is_dataclass(tp):
        return "a section with keys " + ", ".join(f.name for f in dataclasses.fields(tp))
    return f"{getattr(tp, '__name__', str(tp))}{_range(meta)}"


def _join(key: str, name: str) -> str:
    return f"{key}.{name}" if key else name


def _scalar(tp, value, key: str, meta) -> Any:
    def fail(extra: str = "") -> ConfigError:
        return ConfigError(f"{key}: expected {describe(tp, meta)}{extra}, got {value!r}")

    if tp is bool:
        if not isinstance(value, bool):
            raise fail()
        return value
    if tp in (int, float):
        if isinstance(value, bool) or not isinstance(value, (int, float)) or (tp is int and isinstance(value, float)):
            raise fail()
        if isinstance(value, float) and not math.isfinite(value):
            raise ConfigError(f"{key}: expected a finite {describe(tp, meta)}, got {value!r}")
        low, high = meta.get("low"), meta.get("high")
        if (low is not None and value < low) or (high is not None and value > high):
            raise fail()
        return value
    if tp is str:
        if not isinstance(value, str):
            raise fail()
        return value
    raise TypeError(f"{key}: unsupported field type {tp!r}")


def convert(tp, value, key: str, meta=None) -> Any:
    meta = meta or {}
    origin, args = get_origin(tp), get_args(tp)
    if origin is Literal:
        if value not in args or isinstance(value, bool) != any(isinstance(a, bool) for a in args if a == value):
            raise ConfigError(f"{key}: expected {describe(tp)}, got {value!r}")
        return value
    if origin in (Union, types.UnionType):
        if value is None and type(None) in args:
            return None
        (inner,) = [a for a in args if a is not type(None)]
        try:
            return convert(inner, value, key, meta)
        except ConfigError as err:
            if str(err).startswith(f"{key}: "):  # this value, not one inside it: say null is allowed
                raise ConfigError(f"{key}: expected {describe(tp, meta)}, got {value!r}") from None
            raise
    if origin is list:
        if not isinstance(value, list):
            raise ConfigError(f"{key}: expected {describe(tp, meta)} (a YAML list such as [1, 2]), got {value!r}")
        return [convert(args[0], v, f"{key}[{i}]", meta) for i, v in enumerate(value)]
    if origin is dict:
        if not isinstance(value, dict):
            raise ConfigError(f"{key}: expected {describe(tp)}, got {value!r}")
        return {name: convert(args[1], v, _join(key, str(name))) for name, v in value.items()}
    if dataclasses.is_dataclass(tp):
        return load(tp, value, key)
    return _scalar(tp, value, key, meta)


class Undeclared:
    """A key a stage did not declare (a stage reads only the keys dvc.yaml lists for it, so that
    an edit of any other key leaves it alone): `load_declared` puts one where such a key would
    be. Reading it (arithmetic, comparison, truth, formatting, `to_params`) raises, naming the
    key; a sweep may replace it (`dataclasses.replace`) with a value of its own."""

    def __init__(self, key: str):
        object.__setattr__(self, "key", key)

    def _read(self, *_args, **_kwargs):
        raise ConfigError(f"{self.key}: read by this stage, but not among the keys it declares in dvc.yaml "
                          "(python -m emergence.pipeline.dependencies --write adds what a generated stage reads)")

    def __getattr__(self, name: str):
        if name.startswith("__"):
            raise AttributeError(name)
        self._read()

    def __repr__(self) -> str:
        return f"Undeclared({self.key!r})"

    def __hash__(self) -> int:
        return hash(("undeclared", self.key))

    __bool__ = __int__ = __float__ = __index__ = __len__ = __iter__ = __str__ = __format__ = _read
    __eq__ = __ne__ = __lt__ = __le__ = __gt__ = __ge__ = _read
    __add__ = __radd__ = __sub__ = __rsub__ = __mul__ = __rmul__ = __truediv__ = __rtruediv__ = _read
    __floordiv__ = __rfloordiv__ = __mod__ = __rmod__ = __pow__ = __neg__ = _read


def load(cls, data: Any, key: str, declared_only: bool = False):
    """Build dataclass `cls` from a mapping, strictly (see the module docstring). With
    `declared_only` (a stage's params, restricted to the keys it declares): a missing key is an
    `Undeclared`, not an error, and the cross-field checks are left to the full params'
    validation (emergence.pipeline.config), which the stage's params have passed."""
    if not isinstance(data, dict):
        raise ConfigError(f"{key or 'params.yaml'}: expected {describe(cls)}, got {data!r}")
    fields = {f.name: f for f in dataclasses.fields(cls)}
    hints = get_type_hints(cls)  # each field resolved in the module of the class that declares it
    for name in data:
        if name not in fields:
            raise ConfigError(f"{_join(key, str(name))}: unknown parameter (known keys here: {', '.join(fields)})")
    values = {}
    for name, f in fields.items():
        if name not in data:
            if declared_only and not f.metadata.get("absent_when_none"):
                values[name] = Undeclared(_join(key, name))
                continue
            if f.default is dataclasses.MISSING and f.default_factory is dataclasses.MISSING:
                raise ConfigError(f"{_join(key, name)}: missing; expected {describe(hints[name], f.metadata)}")
            continue
        if declared_only and dataclasses.is_dataclass(hints[name]):
            values[name] = load(hints[name], data[name], _join(key, name), declared_only=True)
        else:
            values[name] = convert(hints[name], data[name], _join(key, name), f.metadata)
    obj = cls(**values)
    if hasattr(obj, "check") and not declared_only:
        obj.check(key)
    return obj


def to_params(obj) -> Any:
    """A loaded section back as the mapping it was loaded from (`load(type(obj), to_params(obj), key)`
    gives `obj` again): what cache keys and results' config attributes record, so that they
    read as the YAML does. Fields marked absent_when_none are left out while None."""
    if isinstance(obj, Undeclared):
        obj._read()
    if dataclasses.is_dataclass(obj):
        return {f.name: to_params(getattr(obj, f.name)) for f in dataclasses.fields(obj)
                if not (f.metadata.get("absent_when_none") and getattr(obj, f.name) is None)}
    if isinstance(obj, dict):
        return {k: to_params(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return [to_params(v) for v in obj]
    return obj
