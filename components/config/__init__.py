"""The stack-config contract of hyperpod-inference (pydantic 2, strict)."""

from .base import PROJECT, ConfigIssue
from .loader import ConfigError, load_stack_config, parse_stack_config
from .stack import StackConfig

__all__ = ["PROJECT", "ConfigError", "ConfigIssue", "StackConfig", "load_stack_config", "parse_stack_config"]
