"""Generate ``instance_types.json``: the hardware of every HyperPod instance type the program accepts.

    venv/bin/python -m components.config.data.generate_instance_types

Which types: the union over regions of cfn-lint's HyperPod instance-type table (the list
``components/config/regions.py`` validates ``cluster.instanceGroups[].instanceType`` against), so every type a
stack may name has an entry. What each type has: EC2's ``DescribeInstanceTypes`` answer as moto ships it
(``moto/ec2/resources/instance_types.json.gz``; a HyperPod ``ml.X`` type is EC2's ``X``). The file records the
moto version and the SHA-256 of that archive; re-run this after bumping moto or cfn-lint (the test
``tests/test_capacity.py::test_every_accepted_instance_type_has_an_entry`` fails when a type is missing).

``instanceStoreGB`` / ``instanceStoreNvme`` are the instance store (local disks) the type has, from the same
records (``InstanceStorageSupported``, ``InstanceStorageInfo``): what weights caching
(``modelCacheConfig.weightsCache``) needs on the endpoint's nodes.

``maxPods`` is derived with the formula of the EKS AMI's ``eni-max-pods.txt`` (awslabs/amazon-eks-ami@5e1334f2
``nodeadm/internal/kubelet/eni-max-pods.txt`` header: "# of ENI * (# of IPv4 per ENI - 1) + 2", and "for
multi-card instance types (p5.48xlarge) the max limits is calculated only against the default network card").
"""

from __future__ import annotations

import gzip
import hashlib
import json
from importlib import metadata
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
OUT = HERE / "instance_types.json"
MOTO_PATH = ("ec2", "resources", "instance_types.json.gz")


def _moto_catalogue() -> tuple[dict[str, Any], str, str]:
    import moto

    path = Path(moto.__file__).resolve().parent.joinpath(*MOTO_PATH)
    raw = path.read_bytes()
    return json.loads(gzip.decompress(raw)), metadata.version("moto"), hashlib.sha256(raw).hexdigest()


def max_pods(info: dict[str, Any]) -> int:
    """ENIs of the default network card x (IPv4 addresses per ENI - 1) + 2 (eni-max-pods.txt formula)."""
    net = info["NetworkInfo"]
    cards = net.get("NetworkCards") or []
    default = net.get("DefaultNetworkCardIndex", 0)
    enis = next(
        (c["MaximumNetworkInterfaces"] for c in cards if c.get("NetworkCardIndex") == default),
        net["MaximumNetworkInterfaces"],
    )
    return int(enis * (net["Ipv4AddressesPerInterface"] - 1) + 2)


def entry(info: dict[str, Any]) -> dict[str, Any]:
    """The fields the capacity checks read, from one DescribeInstanceTypes record."""
    vcpu = info["VCpuInfo"]
    gpus = (info.get("GpuInfo") or {}).get("Gpus") or []
    neuron = (info.get("NeuronInfo") or {}).get("NeuronDevices") or []
    net = info["NetworkInfo"]
    return {
        "vcpus": vcpu["DefaultVCpus"],
        "cores": vcpu.get("DefaultCores", vcpu["DefaultVCpus"]),
        "defaultThreadsPerCore": vcpu.get("DefaultThreadsPerCore", 1),
        "memoryMiB": info["MemoryInfo"]["SizeInMiB"],
        "architectures": sorted(info["ProcessorInfo"]["SupportedArchitectures"]),
        "gpus": sum(g["Count"] for g in gpus),
        "gpuModel": " + ".join(f"{g['Manufacturer']} {g['Name']}" for g in gpus) or None,
        "gpuMemoryMiB": gpus[0]["MemoryInfo"]["SizeInMiB"] if gpus else None,
        "neuronDevices": sum(d["Count"] for d in neuron),
        "neuronCores": sum(d["Count"] * d["CoreInfo"]["Count"] for d in neuron),
        "efaSupported": bool(net.get("EfaSupported", False)),
        "maxEfaInterfaces": (net.get("EfaInfo") or {}).get("MaximumEfaInterfaces", 0),
        "maxNetworkInterfaces": net["MaximumNetworkInterfaces"],
        "maxPods": max_pods(info),
        # Instance store: total size and whether its volumes are NVMe (DescribeInstanceTypes InstanceStorageInfo:
        # TotalSizeInGB, NvmeSupport required|supported|unsupported); 0 / null when the type has none.
        "instanceStoreGB": (info.get("InstanceStorageInfo") or {}).get("TotalSizeInGB", 0)
        if info.get("InstanceStorageSupported")
        else 0,
        "instanceStoreNvme": (info.get("InstanceStorageInfo") or {}).get("NvmeSupport")
        if info.get("InstanceStorageSupported")
        else None,
    }


def generate() -> dict[str, Any]:
    from components.config.regions import hyperpod_instance_types, hyperpod_regions

    catalogue, moto_version, digest = _moto_catalogue()
    accepted = sorted(set().union(*(hyperpod_instance_types(r) for r in hyperpod_regions())))
    missing = [t for t in accepted if t.removeprefix("ml.") not in catalogue]
    if missing:
        raise SystemExit(f"moto {moto_version} has no EC2 data for: {', '.join(missing)}")
    return {
        "source": {
            "catalogue": f"moto {moto_version}: moto/{'/'.join(MOTO_PATH)} (EC2 DescribeInstanceTypes records)",
            "sha256": digest,
            "types": f"cfn-lint {metadata.version('cfn-lint')} aws_sagemaker_cluster/instancetype_enum.json, all regions",
            "maxPods": "awslabs/amazon-eks-ami@5e1334f2 nodeadm/internal/kubelet/eni-max-pods.txt formula",
            "generator": "components/config/data/generate_instance_types.py",
        },
        "instanceTypes": {t: entry(catalogue[t.removeprefix("ml.")]) for t in accepted},
    }


def render(doc: dict[str, Any]) -> str:
    """JSON with one instance type per line (small, and diffs show which types changed)."""
    types = ",\n".join(f"  {json.dumps(k)}: {json.dumps(v)}" for k, v in doc["instanceTypes"].items())
    return f'{{\n "source": {json.dumps(doc["source"], indent=2)},\n "instanceTypes": {{\n{types}\n }}\n}}\n'


def main(argv: list[str] | None = None) -> int:
    import argparse

    parser = argparse.ArgumentParser(
        prog="python -m components.config.data.generate_instance_types",
        description=f"Regenerate {OUT.name} from moto's EC2 records and cfn-lint's HyperPod instance types.",
    )
    parser.parse_args(argv)  # no options: --help (and an unknown option) must not rewrite the file
    OUT.write_text(render(generate()), encoding="utf-8")
    print(f"wrote {OUT}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
