"""The stack-config contract of hyperpod-inference (pydantic 2, strict)."""

from .base import PROJECT, ConfigIssue
from .global_gateway import GlobalStackConfig
from .loader import ConfigError, load_program_config, load_stack_config, parse_stack_config
from .stack import StackConfig

__all__ = [
    "PROJECT",
    "ConfigError",
    "ConfigIssue",
    "GlobalStackConfig",
    "StackConfig",
    "load_program_config",
    "load_stack_config",
    "parse_stack_config",
]
