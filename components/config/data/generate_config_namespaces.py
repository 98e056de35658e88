"""Generate ``config_namespaces.json``: the config namespaces of the providers the program uses, and their keys.

    venv/bin/python -m components.config.data.generate_config_namespaces

A Pulumi config key is ``<namespace>:<name>`` (Pulumi docs, "Configuration", section "Configuration keys":
"Configuration keys use the format ``[<namespace>:]<key-name>``"; the CLI parses stack-file keys with
pulumi/pulumi ``sdk/go/common/resource/config/key.go`` ``ParseKey``, which accepts ``<namespace>:<name>`` only).
A provider reads the keys of its own namespace, the package name, for its default provider (``aws:region``).

Which providers: the Pulumi SDK packages the program imports (``import pulumi_<x>`` in ``__main__.py`` and
``components/``, found with :mod:`ast`), so a provider the program stops using drops out. For each, the namespace
is the ``name`` of the SDK's ``pulumi-plugin.json`` and the keys are the properties of its generated
``ProviderArgs`` (``@pulumi.getter(name=...)``, camelCase as in a stack file) together with the variables of its
``config/vars.py`` (``__config__.get('<key>')``) where the SDK has one. Re-run after bumping a provider SDK; a test
fails when this file differs from what the generator writes.
"""

from __future__ import annotations

import ast
import importlib.util
import json
import re
from importlib import metadata
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
OUT = HERE / "config_namespaces.json"
ROOT = HERE.parents[2]
# The SDK modules that are no provider (the core SDK and the policy SDK have no config namespace of their own).
NOT_PROVIDERS = frozenset({"pulumi", "pulumi_policy"})

_GETTER = re.compile(r"@pulumi\.getter(?:\(name=\"(\w+)\"\))?\n\s+def (\w+)\(self\)")
_CONFIG_GET = re.compile(r"__config__\.get\w*\('(\w+)'")


def imported_sdks(root: Path = ROOT) -> list[str]:
    """``pulumi_*`` provider SDK modules imported by the program (``__main__.py`` and ``components/``)."""
    found: set[str] = set()
    for path in [root / "__main__.py", *sorted((root / "components").rglob("*.py"))]:
        tree = ast.parse(path.read_text(encoding="utf-8"))
        for node in ast.walk(tree):
            names = []
            if isinstance(node, ast.Import):
                names = [a.name for a in node.names]
            elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
                names = [node.module]
            found.update(n.split(".")[0] for n in names if n.split(".")[0].startswith("pulumi_"))
    return sorted(found - NOT_PROVIDERS)


def _package_dir(module: str) -> Path:
    spec = importlib.util.find_spec(module)
    if spec is None or not spec.submodule_search_locations:
        raise SystemExit(f"{module} is not installed (pip install -r requirements.txt)")
    return Path(next(iter(spec.submodule_search_locations)))


def provider_keys(package: Path) -> list[str]:
    """The provider's config keys: ``ProviderArgs`` properties and ``config/vars.py`` variables, camelCase."""
    source = (package / "provider.py").read_text(encoding="utf-8")
    start = source.find("class ProviderArgs")
    end = source.find("class Provider(", start)
    args = source[start:end] if start >= 0 else ""
    keys = {m.group(1) or m.group(2) for m in _GETTER.finditer(args)}
    variables = package / "config" / "vars.py"
    if variables.is_file():
        keys.update(_CONFIG_GET.findall(variables.read_text(encoding="utf-8")))
    return sorted(keys)


def generate() -> dict[str, Any]:
    providers: dict[str, Any] = {}
    for module in imported_sdks():
        package = _package_dir(module)
        plugin = json.loads((package / "pulumi-plugin.json").read_text(encoding="utf-8"))
        dist = module.replace("_", "-")
        providers[plugin["name"]] = {
            "sdk": f"{dist} {metadata.version(dist)}",
            "keys": provider_keys(package),
        }
    return {
        "source": {
            "convention": "Pulumi docs, Configuration: 'Configuration keys use the format [<namespace>:]<key-name>'; "
            "pulumi/pulumi sdk/go/common/resource/config/key.go ParseKey (<namespace>:<name>)",
            "providers": "the pulumi_* SDKs imported by __main__.py and components/ (ast); namespace = the SDK's "
            "pulumi-plugin.json name; keys = its ProviderArgs properties and config/vars.py variables",
            "generator": "components/config/data/generate_config_namespaces.py",
        },
        "pulumiNamespace": "pulumi",
        "providers": providers,
    }


def render(doc: dict[str, Any]) -> str:
    return json.dumps(doc, indent=1, sort_keys=True) + "\n"


def main(argv: list[str] | None = None) -> int:
    import argparse

    parser = argparse.ArgumentParser(
        prog="python -m components.config.data.generate_config_namespaces", description=f"Regenerate {OUT.name}."
    )
    parser.parse_args(argv)  # no options: --help (and an unknown option) must not rewrite the file
    OUT.write_text(render(generate()), encoding="utf-8")
    print(f"wrote {OUT}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
