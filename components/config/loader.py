"""Read the stack config from the Pulumi runtime, validate it, and report every problem at once.

The Pulumi program calls :func:`load_stack_config`; the offline preview and the tests reach the same code
through the same runtime config (``pulumi.runtime.set_all_config``), so there is one path for all three.
"""

from __future__ import annotations

import json
import types
import typing
from collections.abc import Iterable, Mapping
from typing import Any

import pulumi
from pulumi.runtime import config as runtime_config
from pydantic import BaseModel, Tag, ValidationError

from .aws_chain import aws_chain_issues
from .base import PROJECT, ConfigIssue, join_path
from .cluster import chart_issues, running_for_real
from .context import read_context
from .errors import ConfigError
from .global_gateway import GlobalStackConfig, parse_global_config
from .stack import CONFIG_KEYS, StackConfig
from .stackfile import config_from_mapping, config_key_problem
from .validation import config_issues

# Keys whose values must arrive as Pulumi secrets, with the top-level key that carries them.
SECRET_PATHS: dict[str, tuple[str, ...]] = {
    "ingress": ("ingress", "oidc", "clientSecret"),
    "kvCache": ("kvCache", "redis", "external", "url"),  # may carry the AUTH token
}


def _all_runtime_config() -> dict[str, Any]:
    merged = dict(runtime_config.get_config_env())
    merged.update(runtime_config.CONFIG.get())
    return merged


def decode_config_value(value: Any) -> Any:
    """A runtime config value as data: Pulumi passes structured values as JSON strings."""
    if isinstance(value, str) and value[:1] in ("{", "["):
        try:
            return json.loads(value)
        except json.JSONDecodeError:
            return value
    return value


def namespace_issues(keys: Iterable[str]) -> list[ConfigIssue]:
    """Config keys nothing reads (no namespace, an unknown or misspelt namespace, a provider key that provider does
    not have): the rule of ``stackfile.config_key_problem``, here for the config the engine passes the program."""
    return [ConfigIssue(str(key), problem) for key in keys if (problem := config_key_problem(key)) is not None]


def parse_config(
    everything: Mapping[str, Any], *, stack: str, secret_keys: Iterable[str] = ()
) -> StackConfig | GlobalStackConfig:
    """The validated config of a stack from all its config keys (``{"ns:key": value}``, values as the runtime gives
    them), by its role: ``hyperpod-inference:role: global`` is a global stack. Raises :class:`ConfigError`."""
    prefix = f"{PROJECT}:"
    values = {k[len(prefix) :]: decode_config_value(v) for k, v in everything.items() if k.startswith(prefix)}
    kubernetes = values.get("role") != "global"  # a global stack makes no Kubernetes call
    stray = [*namespace_issues(everything), *aws_chain_issues(everything, kubernetes=kubernetes)]
    region = everything.get("aws:region")
    if values.get("role") == "global":
        return parse_global_config(values, stack=stack, region=region, outside=stray)
    secret = {k[len(prefix) :] for k in secret_keys if k.startswith(prefix)}
    return parse_stack_config(values, stack=stack, region=region, secret_keys=secret, outside=stray)


def parse_stack_mapping(stack: str, mapping: Mapping[str, Any]) -> StackConfig | GlobalStackConfig:
    """A stack file's ``config:`` mapping (``stackfile.load_stack_file``) validated exactly as the program does."""
    config, secrets = config_from_mapping(dict(mapping))
    return parse_config(config, stack=stack, secret_keys=secrets)


def load_stack_config() -> StackConfig:
    """Validate the running stack's config, a regional stack (raises :class:`ConfigError`)."""
    cfg = load_program_config()
    if not isinstance(cfg, StackConfig):
        raise ConfigError([ConfigIssue("role", "this is a global stack (role: global), not a regional one")])
    return cfg


def load_program_config() -> StackConfig | GlobalStackConfig:
    """The running stack's config, by its role: ``hyperpod-inference:role: global`` is a global stack."""
    everything = _all_runtime_config()
    secret = [k for k in everything if runtime_config.is_config_secret(k)]
    return parse_config(everything, stack=pulumi.get_stack(), secret_keys=secret)


def parse_stack_config(
    values: dict[str, Any],
    *,
    stack: str,
    region: str | None,
    secret_keys: set[str] | frozenset[str] = frozenset(),
    outside: Iterable[ConfigIssue] = (),
) -> StackConfig:
    """Validate decoded config values (keys without the project prefix); ``outside`` are problems already found
    with the keys of other namespaces (reported with the rest).

    The entry point of validation: it reads what the checks know besides the stack file once
    (``context.read_context``: today's date, what verify observed) and, under a real engine, the vendored chart."""
    issues: list[ConfigIssue] = list(outside)
    if values.get("role") == "regional":  # the default role, written out
        values = {k: v for k, v in values.items() if k != "role"}
    for key in values:
        if key not in CONFIG_KEYS:
            issues.append(ConfigIssue(key, f"unknown key; allowed keys are: {', '.join(CONFIG_KEYS)}"))
    if region is None:
        issues.append(
            ConfigIssue(
                "aws:region", "not set; set the stack's AWS region with `pulumi config set aws:region <region>`"
            )
        )
    for key, path in SECRET_PATHS.items():
        if key in values and _dig(values, path) is not None and key not in secret_keys:
            issues.append(
                ConfigIssue(
                    join_path(*path),
                    "must be a Pulumi secret (`pulumi config set --secret --path "
                    f"{PROJECT}:{join_path(*path)} <value>`), not plain text",
                )
            )
    raw = {k: v for k, v in values.items() if k in CONFIG_KEYS}
    try:
        cfg = StackConfig.model_validate(
            {**raw, "stack": stack, "region": region or "unset-region-0"}, context=read_context(stack, region)
        )
    except ValidationError as err:
        found = _issues_from_validation(err)
        if region is None:
            # The placeholder only lets the rest of the model validate; its own pattern error would report
            # the missing region a second time, naming a value the user never wrote.
            found = [i for i in found if i.path != "aws:region"]
        issues.extend(found)
        raise ConfigError(issues) from None
    issues.extend(config_issues(cfg))
    # Under mocks (tests, `tools.cli.preview`) nothing is installed, so the chart may be absent; a real preview or up
    # hands the path to Helm, which fails late and unclearly without it. An adopted HyperPod cluster has its chart.
    adopted = cfg.cluster.existing is not None and cfg.cluster.existing.hyperpod_cluster_arn is not None
    if running_for_real() and not adopted:
        issues.extend(chart_issues(cfg.cluster.hyperpod_dependencies))
    if issues:
        raise ConfigError(issues)
    return cfg


def _dig(values: Any, path: tuple[str, ...]) -> Any:
    for part in path:
        if not isinstance(values, dict) or part not in values:
            return None
        values = values[part]
    return values


def _issues_from_validation(err: ValidationError) -> list[ConfigIssue]:
    out: list[ConfigIssue] = []
    for e in err.errors(include_url=False):
        tagged = [p for p in e["loc"] if not (isinstance(p, str) and _is_union_tag(p))]
        loc = _clean_loc(StackConfig, tagged)
        path = join_path(*loc) if loc else "(root)"
        if path == "region":
            path = "aws:region"
        kind = e["type"]
        if kind == "extra_forbidden":
            allowed = _allowed_keys(StackConfig, tagged[:-1])
            hint = f"; allowed keys here: {', '.join(allowed)}" if allowed else ""
            out.append(ConfigIssue(path, f"unknown key{hint}"))
        elif kind == "missing":
            out.append(ConfigIssue(path, "required key is missing"))
        else:
            msg = e["msg"].removeprefix("Value error, ")
            shown = e.get("input")
            if isinstance(shown, (str, int, float)) and not isinstance(shown, bool) and "secret" not in path.lower():
                msg = f"{msg} (got {shown!r})"
            if kind == "string_type" and isinstance(shown, (int, float)) and not isinstance(shown, bool):
                msg += f"; {_quote_hint(path, shown)}"
            out.append(ConfigIssue(path, msg))
    return out


def _quote_hint(path: str, number: float) -> str:
    """YAML reads an unquoted ``1.30`` as the number 1.3 (YAML 1.1/1.2 core schema: a float), which loses the
    trailing zero; a version must be written as a string."""
    key = path.rsplit(".", 1)[-1]
    example = f"{number:.2f}" if isinstance(number, float) and len(repr(number).split(".")[-1]) == 1 else str(number)
    return f'YAML read an unquoted number: quote the value, e.g. {key}: "{example}" (unquoted 1.30 is the number 1.3)'


def _is_union_tag(part: str) -> bool:
    # pydantic inserts the union member / validator name into loc (e.g. "function-after[...]", "str").
    return "[" in part or part in {"str", "int", "float", "bool", "list", "dict"}


def _tagged_members(tp: Any) -> dict[str, Any]:
    """``{tag: model}`` of a discriminated union whose members are ``Annotated[Model, Tag(...)]``."""
    if typing.get_origin(tp) is typing.Annotated:
        tp = typing.get_args(tp)[0]
    if typing.get_origin(tp) not in (typing.Union, types.UnionType):
        return {}
    out: dict[str, Any] = {}
    for member in typing.get_args(tp):
        if typing.get_origin(member) is typing.Annotated:
            cls, *meta = typing.get_args(member)
            out.update({m.tag: cls for m in meta if isinstance(m, Tag)})
    return out


def _clean_loc(model: type[BaseModel], loc: list[Any]) -> list[Any]:
    """``loc`` without the tags pydantic inserts for discriminated unions (``endpoints.0.JumpStartModel.spec``)."""
    out: list[Any] = []
    current: Any = model
    for part in loc:
        current = _unwrap(current)
        members = _tagged_members(current)
        if isinstance(part, str) and part in members:
            current = members[part]
            continue
        out.append(part)
        if isinstance(part, int) or current is None:
            continue
        if isinstance(current, type) and issubclass(current, BaseModel):
            field = next((f for n, f in current.model_fields.items() if part in (f.alias or n, n)), None)
            current = field.annotation if field is not None else None
        else:
            current = None
    return out


def _allowed_keys(model: type[BaseModel], loc: list[Any]) -> list[str]:
    """The keys a stack file may write at ``loc`` (walking through lists, dicts, optionals, tagged unions)."""
    current: Any = model
    for part in loc:
        current = _unwrap(current)
        members = _tagged_members(current)
        if isinstance(part, str) and part in members:
            current = members[part]
            continue
        if isinstance(part, int) or current is None:
            continue
        if isinstance(current, type) and issubclass(current, BaseModel):
            field = next((f for n, f in current.model_fields.items() if part in (f.alias or n, n)), None)
            if field is None:
                return []
            current = field.annotation
        else:
            return []
    current = _unwrap(current)
    if isinstance(current, type) and issubclass(current, BaseModel):
        return [f.alias or n for n, f in current.model_fields.items() if not f.exclude]
    return []


def _unwrap(tp: Any) -> Any:
    """Strip Optional/list/dict/Annotated wrappers down to the model class they hold."""
    for _ in range(5):
        origin = typing.get_origin(tp)
        if origin is typing.Annotated:
            tp = typing.get_args(tp)[0]
        elif origin in (list, tuple, set):
            tp = typing.get_args(tp)[0]
        elif origin is dict:
            tp = typing.get_args(tp)[1]
        elif origin in (typing.Union, types.UnionType):
            if _tagged_members(tp):
                break
            models = [a for a in typing.get_args(tp) if isinstance(a, type) and issubclass(a, BaseModel)]
            tp = models[0] if len(models) == 1 else None
        else:
            break
    return tp
