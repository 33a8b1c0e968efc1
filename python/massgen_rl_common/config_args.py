"""Turn an arguments dataclass into a command line, with an optional YAML/JSON `--config FILE`.

Precedence: the dataclass defaults, then the config file, then flags given on the command line.
Every problem (unknown flag or config key, bad value, missing required argument) raises `UsageError`;
`protocol.run_script` turns that into exit code 2.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import types
import typing
from pathlib import Path
from typing import Any, TypeVar

T = TypeVar("T")


class UsageError(Exception):
    """Bad arguments: reported on stderr and as an error event, then exit code 2."""


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> typing.NoReturn:  # argparse's own complaints
        raise UsageError(message)


def _scalar_type(hint: Any) -> Any:
    """`str | None` -> `str`; anything else unchanged."""
    if typing.get_origin(hint) in (typing.Union, types.UnionType):
        rest = [arg for arg in typing.get_args(hint) if arg is not type(None)]
        if len(rest) == 1:
            return rest[0]
    return hint


def _is_required(field: dataclasses.Field) -> bool:
    return field.default is dataclasses.MISSING and field.default_factory is dataclasses.MISSING


def build_parser(cls: type, prog: str | None = None) -> argparse.ArgumentParser:
    """An argparse parser with one flag per dataclass field (`--max-new-tokens` and `--max_new_tokens`)."""
    parser = _Parser(prog=prog, description=(cls.__doc__ or "").strip() or None, allow_abbrev=False)
    parser.add_argument("--config", metavar="FILE", help="YAML or JSON file of arguments; command-line flags win.")
    hints = typing.get_type_hints(cls)
    for field in dataclasses.fields(cls):
        kind = _scalar_type(hints[field.name])
        flags = dict.fromkeys([f"--{field.name.replace('_', '-')}", f"--{field.name}"])
        text = field.metadata.get("help", "")
        text += " (required)" if _is_required(field) else f" (default: {field.default!r})"
        if kind is bool:
            parser.add_argument(
                *flags, dest=field.name, action=argparse.BooleanOptionalAction, default=argparse.SUPPRESS, help=text
            )
        else:
            parser.add_argument(
                *flags, dest=field.name, type=kind, default=argparse.SUPPRESS, metavar=field.name.upper(), help=text
            )
    return parser


def _yaml_load(text: str) -> Any:
    """YAML with YAML 1.2 booleans (only true/false): the config writer (the CLI's `yaml` package) writes 1.2, where
    `on`/`off`/`yes`/`no` are strings, while PyYAML's 1.1 rules would turn a value like `is_correction: off` into
    False."""
    import re

    import yaml  # a dependency of transformers; YAML is a superset of JSON

    class Loader(yaml.SafeLoader):
        pass

    bool_tag = "tag:yaml.org,2002:bool"
    Loader.yaml_implicit_resolvers = {
        first: [(tag, rx) for tag, rx in resolvers if tag != bool_tag]
        for first, resolvers in yaml.SafeLoader.yaml_implicit_resolvers.items()
    }
    Loader.add_implicit_resolver(bool_tag, re.compile(r"^(?:true|True|TRUE|false|False|FALSE)$"), list("tTfF"))
    return yaml.load(text, Loader=Loader)


def load_config(path: str) -> dict[str, Any]:
    """Read a YAML (or JSON) mapping; keys may be spelled with dashes or underscores."""
    try:
        text = Path(path).read_text(encoding="utf-8")
    except OSError as exc:
        raise UsageError(f"cannot read config file {path}: {exc.strerror or exc}") from None
    try:
        if Path(path).suffix.lower() == ".json":
            data = json.loads(text)
        else:
            data = _yaml_load(text)
    except Exception as exc:  # json/yaml parse errors carry the line and column
        raise UsageError(f"cannot parse config file {path}: {exc}") from None
    if data is None:
        return {}
    if not isinstance(data, dict):
        raise UsageError(f"config file {path} must hold a mapping of argument names, not {type(data).__name__}")
    return {str(key).replace("-", "_"): value for key, value in data.items()}


def _coerce(name: str, kind: Any, value: Any, optional: bool, path: str) -> Any:
    return coerce_value(f"config file {path}: key {name!r}", kind, value, optional)


def field_kind(cls: type, name: str) -> tuple[Any, bool]:
    """A dataclass field's scalar type and whether it may be null (`int | None` -> (int, True))."""
    hint = typing.get_type_hints(cls)[name]
    kind = _scalar_type(hint)
    return kind, kind is not hint


def coerce_value(where: str, kind: Any, value: Any, optional: bool) -> Any:
    """A config value as the field's type (an int where a float goes, a number's string); UsageError naming `where`."""
    if value is None:
        if optional:
            return None
        raise UsageError(f"{where} may not be null")
    if kind is bool:
        if isinstance(value, bool):
            return value
        raise UsageError(f"{where} must be true or false, got {value!r}")
    if kind in (int, float, str) and not isinstance(value, (bool, list, dict)):
        try:
            converted = kind(value)
        except (TypeError, ValueError):
            raise UsageError(f"{where} must be {kind.__name__}, got {value!r}") from None
        if kind is int and isinstance(value, float) and value != converted:
            raise UsageError(f"{where} must be an integer, got {value!r}")
        return converted
    raise UsageError(f"{where} must be {getattr(kind, '__name__', kind)}, got {value!r}")


def _json_value(text: str) -> Any:
    try:
        return json.loads(text)
    except ValueError as exc:
        raise ValueError(f"not JSON: {exc}") from None


def parse_args(
    cls: type[T], argv: list[str] | None = None, prog: str | None = None, json_fields: tuple[str, ...] = ()
) -> T:
    """Parse `argv` (default: sys.argv[1:]) into an instance of the dataclass `cls`.

    `json_fields` take a mapping: a JSON object on the command line, passed through as-is from the config file.
    """
    parser = build_parser(cls, prog=prog)
    for action in parser._actions:
        if action.dest in json_fields:
            action.type, action.metavar = _json_value, "JSON"
    cli = vars(parser.parse_args(argv))
    config_path = cli.pop("config", None)
    hints = typing.get_type_hints(cls)
    fields = {field.name: field for field in dataclasses.fields(cls)}
    values: dict[str, Any] = {}
    if config_path is not None:
        config = load_config(config_path)
        unknown = sorted(set(config) - set(fields))
        if unknown:
            raise UsageError(
                f"unknown key(s) in config file {config_path}: {', '.join(map(repr, unknown))} "
                f"(allowed: {', '.join(fields)})"
            )
        for name, value in config.items():
            if name in json_fields:
                values[name] = value
                continue
            optional = _scalar_type(hints[name]) is not hints[name]
            values[name] = _coerce(name, _scalar_type(hints[name]), value, optional, config_path)
    values.update(cli)
    missing = [name for name, field in fields.items() if _is_required(field) and name not in values]
    if missing:
        flags = ", ".join(f"--{name.replace('_', '-')}" for name in missing)
        raise UsageError(f"the following arguments are required: {flags}")
    return cls(**values)
