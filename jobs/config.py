"""Typed job configs: frozen dataclasses, loaded from TOML, overridden with ``--set key=value``.

A job declares its config as a tree of frozen dataclasses whose defaults are the embedded
defaults. ``load_config(Cls, path, overrides)`` merges, in order: the defaults, the TOML file,
then each ``--set dotted.key=value`` (the value is parsed as a TOML value, falling back to a
plain string, so ``--set rules.min_chars=200`` and ``--set reader.source=news`` both work).
Unknown keys and wrongly typed values are errors that name the key and the valid choices.

A root config may declare ``RENAMED: ClassVar[dict[str, str]]``, old dotted key -> new one: a file
or ``--set`` that still uses an old key (or anything under it) gets an error naming the new key.

A section's keys replace the job's default for that section (the field's default), key by key. A
section class with a ``from_preset(name)`` classmethod also takes a ``preset`` key: the named
instance is then the base the section's other keys replace (``[model] preset = "13B"``).
"""

from __future__ import annotations

import dataclasses
import tomllib
import types
import typing
from pathlib import Path
from typing import Any, TypeVar

from base.errors import Refusal

T = TypeVar("T")


class ConfigError(Refusal):
    """A config file or override that does not fit the job's config schema."""


def load_config(cls: type[T], path: str | Path | None = None, overrides: list[str] | tuple[str, ...] = ()) -> T:
    raw: dict[str, Any] = {}
    if path is not None:
        try:
            raw = tomllib.loads(Path(path).read_text(encoding="utf-8"))
        except (OSError, tomllib.TOMLDecodeError) as e:
            raise ConfigError(f"cannot read config {path}: {e}") from e
    for item in overrides:
        key, value = parse_override(item)
        _set_dotted(raw, key, value)
    _refuse_renamed(raw, getattr(cls, "RENAMED", {}))
    return build(cls, raw, prefix="")


def _refuse_renamed(raw: dict[str, Any], renamed: dict[str, str]) -> None:
    for key in _dotted_keys(raw):
        now = _renamed(key, renamed)
        if now != key:
            raise ConfigError(f"{key} was renamed: use {now}")


def _renamed(key: str, renamed: dict[str, str]) -> str:
    """``key`` with every rename applied (old -> new; new "" moves the key up to the top level)."""
    for _ in range(len(renamed) + 1):
        for old, new in renamed.items():
            if key == old or key.startswith(old + "."):
                key = (new + key[len(old) :]) if new else key[len(old) + 1 :]
                break
        else:
            return key
    return key


def _dotted_keys(tree: dict[str, Any], prefix: str = "") -> list[str]:
    """The leaves of ``tree`` as dotted keys."""
    keys = []
    for k, v in tree.items():
        keys += _dotted_keys(v, prefix + k + ".") if isinstance(v, dict) and v else [prefix + k]
    return keys


def parse_override(item: str) -> tuple[str, Any]:
    """``"a.b=3"`` -> ``("a.b", 3)``; the value is TOML (``[1, 2]``, ``true``, ``"x"``) or a bare string."""
    key, sep, text = item.partition("=")
    if not sep or not key.strip():
        raise ConfigError(f"--set expects key=value, got {item!r}")
    try:
        value = tomllib.loads(f"v = {text}")["v"]
    except tomllib.TOMLDecodeError:
        value = text
    return key.strip(), value


def _set_dotted(tree: dict[str, Any], dotted: str, value: Any) -> None:
    *parents, leaf = dotted.split(".")
    node = tree
    for part in parents:
        node = node.setdefault(part, {})
        if not isinstance(node, dict):
            raise ConfigError(f"--set {dotted}: {part} is a value, not a section")
    node[leaf] = value


def build(cls: type[T], raw: dict[str, Any], prefix: str, base: T | None = None) -> T:
    """Instantiate dataclass ``cls`` from a (possibly partial) dict, validating keys and types; the
    keys it lacks keep ``base``'s values (else the class defaults), or the preset's it names."""
    if not isinstance(raw, dict):
        raise ConfigError(f"{prefix or 'config'} must be a table, got {type(raw).__name__}")
    fields = {f.name: f for f in dataclasses.fields(cls)}
    valid = set(fields)
    if hasattr(cls, "from_preset") and "preset" not in fields:
        valid.add("preset")
        if "preset" in raw:
            raw = dict(raw)
            try:
                base = cls.from_preset(raw.pop("preset"))
            except ValueError as e:
                raise ConfigError(f"{prefix}preset: {e}") from e
    unknown = sorted(set(raw) - valid)
    if unknown:
        raise ConfigError(f"unknown key(s) {', '.join(prefix + k for k in unknown)}; valid: {', '.join(sorted(valid))}")
    hints = typing.get_type_hints(cls)
    kwargs = {}
    for name, value in raw.items():
        default = _section_default(fields[name]) if dataclasses.is_dataclass(hints[name]) else None
        kwargs[name] = _coerce(hints[name], value, prefix + name, default)
    try:  # a config class checks its values (__post_init__): a bad value is the user's, a refusal
        return dataclasses.replace(base, **kwargs) if base is not None else cls(**kwargs)
    except (ValueError, TypeError) as e:
        if isinstance(e, ConfigError):
            raise
        raise ConfigError(f"{prefix.rstrip('.') or 'config'}: {e}") from e


def _section_default(f: dataclasses.Field) -> Any:
    """The job's default for a nested section: the field's default instance, if it has one."""
    if f.default_factory is not dataclasses.MISSING:
        return f.default_factory()
    return None if f.default is dataclasses.MISSING else f.default


def _coerce(tp: Any, value: Any, key: str, default: Any = None) -> Any:
    origin = typing.get_origin(tp)
    if dataclasses.is_dataclass(tp):
        return build(tp, value, prefix=key + ".", base=default)
    if origin in (typing.Union, types.UnionType):
        args = typing.get_args(tp)
        if value is None and type(None) in args:
            return None
        errors = []
        for arg in args:
            if arg is type(None):
                continue
            try:
                return _coerce(arg, value, key)
            except ConfigError as e:
                errors.append(str(e))
        raise ConfigError("; ".join(errors))
    if origin is typing.Literal:
        choices = typing.get_args(tp)
        if value not in choices:
            raise ConfigError(f"{key} must be one of {list(choices)}, got {value!r}")
        return value
    if origin is tuple:
        (item_tp, _ellipsis) = typing.get_args(tp)
        if isinstance(value, str):
            value = [value]
        if not isinstance(value, (list, tuple)):
            raise ConfigError(f"{key} must be a list, got {value!r}")
        return tuple(_coerce(item_tp, v, f"{key}[{i}]") for i, v in enumerate(value))
    if origin is dict:  # a TOML table of free keys, e.g. data.weights = {news = 2.0}
        key_tp, value_tp = typing.get_args(tp)
        if not isinstance(value, dict):
            raise ConfigError(f"{key} must be a table, got {value!r}")
        return {_coerce(key_tp, k, f"{key} key {k!r}"): _coerce(value_tp, v, f"{key}.{k}") for k, v in value.items()}
    if tp is float and isinstance(value, int) and not isinstance(value, bool):
        return float(value)
    if tp in (int, float, str, bool):
        if isinstance(value, bool) != (tp is bool) or not isinstance(value, tp):
            raise ConfigError(f"{key} must be {tp.__name__}, got {value!r}")
        return value
    raise ConfigError(f"{key}: unsupported config type {tp}")


def to_dict(cfg: Any) -> dict[str, Any]:
    """The resolved config as plain data (for reports and run directories)."""
    return dataclasses.asdict(cfg)
