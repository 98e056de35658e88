"""The cluster layer under mocks: node SG, EKS, HyperPod dependencies, HyperPod cluster, IAM, protection."""

from __future__ import annotations

import copy
import json
from typing import Any

import pytest
from cfnlint.api import ManualArgs, lint
from parliament import analyze_policy_string, enhance_finding

from components.config.cluster import HYPERPOD_CLI_COMMIT, REVIEWED_CHART_COMMITS, HyperPodDependenciesConfig
from components.hyperpod_cluster import LIFECYCLE_DIR, execution_role_policy
from components.hyperpod_dependencies import RELEASE_NAME
from tests.conftest import STACKS, registered, stack_mapping
from tools.plan.harness import StackRun
from tools.plan.mocks import Registration
from tools.plan.render import cloudformation_template

REGIONS = {"dev": "us-west-2", "prod": "us-east-1", "staging": "eu-west-2"}
SG = "aws:ec2/securityGroup:SecurityGroup"
INGRESS = "aws:vpc/securityGroupIngressRule:SecurityGroupIngressRule"
EGRESS = "aws:vpc/securityGroupEgressRule:SecurityGroupEgressRule"
HP = "aws-native:sagemaker:Cluster"
EKS = "eks:index:Cluster"
ADDON = "aws:eks/addon:Addon"
RELEASE = "kubernetes:helm.sh/v3:Release"
SEVERITY = {"LOW": 1, "MEDIUM": 2, "HIGH": 3, "CRITICAL": 4}


def _one(run: StackRun, typ: str, name: str | None = None) -> Registration:
    regs = [r for r in run.of_type(typ) if name is None or r.name == name]
    assert len(regs) == 1, f"expected one {typ} {name or ''}, got {[r.name for r in regs]}"
    return regs[0]


def _ec2_id(reg: Registration) -> str:
    """The physical id of an EC2 resource (the mocks put it at the end of the ARN)."""
    return str(reg.outputs["arn"]).rsplit("/", 1)[-1]


def _node_sg_id(run: StackRun) -> str:
    return _ec2_id(_one(run, SG, "node-sg-sg"))


def _subnet_az(run: StackRun) -> dict[str, str]:
    return {_ec2_id(r): r.inputs["availabilityZoneId"] for r in run.of_type("aws:ec2/subnet:Subnet")}


# --- CloudFormation lint of the rendered AWS::SageMaker::Cluster -------------------------------------------


@pytest.mark.parametrize("stack", STACKS)
def test_rendered_sagemaker_cluster_passes_cfn_lint(stack: str, stack_runs) -> None:
    region = REGIONS[stack]
    template = cloudformation_template(stack_runs[stack].registrations, region)
    clusters = {k: v for k, v in template["Resources"].items() if v["Type"] == "AWS::SageMaker::Cluster"}
    assert len(clusters) == 1
    props = next(iter(clusters.values()))["Properties"]
    # Exact CloudFormation names, including the acronyms aws-native's camelCase loses.
    assert props["InstanceGroups"][0]["InstanceStorageConfigs"][0]["EbsVolumeConfig"]["VolumeSizeInGB"] == 500
    assert props["Orchestrator"]["Eks"]["ClusterArn"].startswith(f"arn:aws:eks:{region}:")
    matches = lint(json.dumps(template), config=ManualArgs(regions=[region]))
    assert [str(m) for m in matches] == []


def test_cfn_lint_catches_a_type_not_offered_in_the_region(stack_runs) -> None:
    """The lint above is not vacuous: the same template with an unavailable instance type fails."""
    template = copy.deepcopy(cloudformation_template(stack_runs["dev"].registrations, "us-west-2"))
    cluster = next(v for v in template["Resources"].values() if v["Type"] == "AWS::SageMaker::Cluster")
    cluster["Properties"]["InstanceGroups"][1]["InstanceType"] = "ml.m6i.4xlarge"
    matches = lint(json.dumps(template), config=ManualArgs(regions=["us-west-2"]))
    assert any("ml.m6i.4xlarge" in str(m) for m in matches), [str(m) for m in matches]


# --- node security group -----------------------------------------------------------------------------------


@pytest.mark.parametrize("stack", STACKS)
def test_node_sg_has_self_ingress_and_self_egress(stack: str, stack_runs) -> None:
    run = stack_runs[stack]
    sg_id = _node_sg_id(run)
    for typ, name in ((INGRESS, "node-sg-self-ingress"), (EGRESS, "node-sg-self-egress")):
        rule = _one(run, typ, name)
        assert rule.inputs["securityGroupId"] == sg_id
        assert rule.inputs["referencedSecurityGroupId"] == sg_id
        assert rule.inputs["ipProtocol"] == "-1"
    https = _one(run, INGRESS, "node-sg-https-from-vpc")
    assert (https.inputs["cidrIpv4"], https.inputs["fromPort"], https.inputs["toPort"]) == (
        str(stack_mapping(stack)["hyperpod-inference:network"]["cidr"]),
        443,
        443,
    )
    # No FSx ports unless asked for.
    assert not [r for r in run.of_type(INGRESS) if r.name.startswith("node-sg-fsx")]


def test_fsx_ports_open_when_fsx_enabled(run) -> None:
    mapping = stack_mapping("dev")
    mapping["hyperpod-inference:cluster"]["fsxEnabled"] = True
    result = registered(run("dev", mapping))
    sg_id = _node_sg_id(result)
    fsx = {
        (r.inputs["fromPort"], r.inputs["toPort"]): r
        for r in result.of_type(INGRESS)
        if r.name.startswith("node-sg-fsx")
    }
    assert set(fsx) == {(988, 988), (1018, 1023)}
    assert all(r.inputs["referencedSecurityGroupId"] == sg_id and r.inputs["ipProtocol"] == "tcp" for r in fsx.values())


def test_control_plane_and_nodes_can_talk(stack_runs) -> None:
    run = stack_runs["dev"]
    sg_id = _node_sg_id(run)
    cluster_sg = _ec2_id(_one(run, SG, "eks-cluster-sg"))
    api = _one(run, INGRESS, "eks-api-from-nodes")
    assert (api.inputs["securityGroupId"], api.inputs["referencedSecurityGroupId"]) == (cluster_sg, sg_id)
    kubelet = _one(run, INGRESS, "eks-nodes-from-api-high")
    assert (kubelet.inputs["securityGroupId"], kubelet.inputs["referencedSecurityGroupId"]) == (sg_id, cluster_sg)
    assert (kubelet.inputs["fromPort"], kubelet.inputs["toPort"]) == (1025, 65535)
    egress = _one(run, EGRESS, "eks-cluster-egress")
    assert (egress.inputs["securityGroupId"], egress.inputs["ipProtocol"]) == (cluster_sg, "-1")


# --- how `pulumi up` reaches the API (deployer access) ----------------------------------------------------


def test_prod_admits_the_declared_runner_before_the_cluster_exists(stack_runs) -> None:
    """prod: private endpoint; the runner CIDR is admitted on 443 by the control-plane SG pulumi-eks is given, and
    the EKS cluster (hence pulumi-eks's aws-auth ConfigMap) is created only after that rule."""
    run = stack_runs["prod"]
    sg = _one(run, SG, "eks-cluster-sg")
    rule = _one(run, INGRESS, "eks-api-from-deployer-cidr-0")
    assert rule.inputs == {
        "securityGroupId": _ec2_id(sg),
        "cidrIpv4": "10.0.8.0/24",
        "ipProtocol": "tcp",
        "fromPort": 443,
        "toPort": 443,
        "description": "Kubernetes API from the deployer (cluster.deployerAccess.cidrs)",
    }
    eks = _one(run, EKS)
    assert eks.inputs["endpointPublicAccess"] is False
    assert eks.inputs["clusterSecurityGroup"] == {"resourceReference": SG}
    assert eks.inputs["skipDefaultSecurityGroups"] is True
    assert rule.urn in eks.dependencies and sg.urn in eks.dependencies
    # every subnet id carries the rule: the aws:eks/cluster:Cluster inside the component waits for it
    assert rule.urn in eks.property_dependencies["privateSubnetIds"]
    # the runner rule is not the nodes' rule
    assert _one(run, INGRESS, "eks-api-from-nodes").urn not in eks.dependencies


ROUTE = "aws:ec2/route:Route"
ROUTE_TABLE = "aws:ec2/routeTable:RouteTable"
TGW_ATTACHMENT = "aws:ec2transitgateway/vpcAttachment:VpcAttachment"
PEERING = "aws:ec2/vpcPeeringConnection:VpcPeeringConnection"


@pytest.mark.parametrize("stack", STACKS)
def test_route_tables_own_no_routes_and_default_routes_are_standalone(stack: str, stack_runs) -> None:
    """An inline `routes=[...]` owns the table's whole route set (it would delete a route someone else adds):
    every route is a standalone aws.ec2.Route (issue 23 item 1)."""
    run = stack_runs[stack]
    tables = {_ec2_id(t): t.name for t in run.of_type(ROUTE_TABLE)}
    azs = len(stack_mapping(stack)["hyperpod-inference:network"]["availabilityZoneIds"])
    # prod has deployer routes: one more table per AZ for the control plane's own subnets (issue 33 item 5)
    assert len(tables) == 1 + azs * (2 if stack == "prod" else 1)
    for table in run.of_type(ROUTE_TABLE):
        assert not table.inputs.get("routes"), f"{table.name} declares inline routes"
    defaults = {r.name: r.inputs for r in run.of_type(ROUTE) if r.inputs["destinationCidrBlock"] == "0.0.0.0/0"}
    igw = _ec2_id(_one(run, "aws:ec2/internetGateway:InternetGateway"))
    assert defaults["network-public-default-route"] == {
        "routeTableId": _ec2_id(_one(run, ROUTE_TABLE, "network-public-rt")),
        "destinationCidrBlock": "0.0.0.0/0",
        "gatewayId": igw,
    }
    nat_ids = {_ec2_id(n) for n in run.of_type("aws:ec2/natGateway:NatGateway")}
    for az in stack_mapping(stack)["hyperpod-inference:network"]["availabilityZoneIds"]:
        route = defaults[f"network-private-{az}-default-route"]
        assert tables[route["routeTableId"]] == f"network-private-{az}-rt"
        assert route["natGatewayId"] in nat_ids and set(route) == {
            "routeTableId",
            "destinationCidrBlock",
            "natGatewayId",
        }


def test_prod_routes_the_runner_network_through_its_transit_gateway_before_the_cluster(stack_runs) -> None:
    """Issue 33 item 5: the route to the runner's network goes only into the route tables of the control plane's own
    /28 subnets (the EKS cluster's subnets, where its ENIs answer), and the transit gateway attaches there: the node
    subnets, where the models run, have no way back to what the transit gateway routes."""
    run = stack_runs["prod"]
    planes = {r.name: r for r in run.of_type("aws:ec2/subnet:Subnet") if r.name.startswith("network-control-plane-")}
    assert {n: r.inputs["cidrBlock"] for n, r in planes.items()} == {
        "network-control-plane-use1-az2": "10.64.255.0/28",
        "network-control-plane-use1-az4": "10.64.255.16/28",
        "network-control-plane-use1-az6": "10.64.255.32/28",
    }
    plane_ids = sorted(_ec2_id(r) for r in planes.values())
    attachment = _one(run, TGW_ATTACHMENT)
    assert attachment.name == "deployer-routes-tgw-0a1b2c3d4e5f60718"
    assert attachment.inputs["transitGatewayId"] == "tgw-0a1b2c3d4e5f60718"
    assert attachment.inputs["vpcId"] == _ec2_id(_one(run, "aws:ec2/vpc:Vpc"))
    assert sorted(attachment.inputs["subnetIds"]) == plane_ids
    tables = {_ec2_id(t): t.name for t in run.of_type(ROUTE_TABLE)}
    routes = [r for r in run.of_type(ROUTE) if r.inputs["destinationCidrBlock"] == "10.0.8.0/24"]
    assert sorted(tables[r.inputs["routeTableId"]] for r in routes) == [
        "network-control-plane-use1-az2-rt",
        "network-control-plane-use1-az4-rt",
        "network-control-plane-use1-az6-rt",
    ]
    # the control plane's tables hold nothing else: no NAT, no internet path
    plane_tables = {_ec2_id(t) for t in run.of_type(ROUTE_TABLE) if t.name.startswith("network-control-plane-")}
    assert [r.name for r in run.of_type(ROUTE) if r.inputs["routeTableId"] in plane_tables] == [r.name for r in routes]
    for route in routes:
        assert route.inputs["transitGatewayId"] == "tgw-0a1b2c3d4e5f60718"
        assert attachment.urn in route.dependencies  # a route to a transit gateway needs the attachment first
    eks = _one(run, EKS)
    assert sorted(eks.inputs["privateSubnetIds"]) == plane_ids
    associations = [
        r for r in run.of_type("aws:ec2/routeTableAssociation:RouteTableAssociation") if "control-plane" in r.name
    ]
    assert len(associations) == 3
    for needed in [*routes, *associations]:
        assert needed.urn in eks.dependencies, needed.name
        assert needed.urn in eks.property_dependencies["privateSubnetIds"], needed.name
    # HyperPod's nodes stay in the private subnets
    hp = _one(run, "aws-native:sagemaker:Cluster")
    private = {_ec2_id(r) for r in run.of_type("aws:ec2/subnet:Subnet") if r.name.startswith("network-private-")}
    assert {s for g in hp.inputs["instanceGroups"] for s in g["overrideVpcConfig"]["subnets"]} <= private


def test_stacks_without_deployer_routes_get_no_control_plane_subnets(stack_runs) -> None:
    for stack in ("dev", "staging"):
        run = stack_runs[stack]
        assert not [r for r in run.of_type("aws:ec2/subnet:Subnet") if "control-plane" in r.name], stack
        private = sorted(
            _ec2_id(r) for r in run.of_type("aws:ec2/subnet:Subnet") if r.name.startswith("network-private-")
        )
        assert sorted(_one(run, EKS).inputs["privateSubnetIds"]) == private, stack


def test_deployer_routes_need_room_for_the_control_plane_subnets(run) -> None:
    mapping = stack_mapping("prod")
    mapping["hyperpod-inference:network"]["availabilityZoneIds"] = ["use1-az1", "use1-az2", "use1-az4", "use1-az6"]
    mapping["hyperpod-inference:network"]["publicSubnetPrefixLength"] = 21
    result = run("prod", mapping)
    assert result.config_error is not None
    issues = [(i.path, i.message) for i in result.config_error.issues]
    assert (
        "cluster.deployerAccess.routes",
        "cluster.deployerAccess.routes needs one /28 control-plane subnet per AZ ID, carved from a /21 block the "
        "public subnets leave free in 10.64.224.0/19; there is none: use a shorter publicSubnetPrefixLength or fewer "
        "AZ IDs",
    ) in issues


def test_peer_vpc_route_creates_the_peering_it_needs(run) -> None:
    mapping = stack_mapping("prod")
    mapping["hyperpod-inference:cluster"]["deployerAccess"]["routes"] = [
        {"cidr": "10.0.8.0/24", "peerVpcId": "vpc-0fedcba9876543210"}
    ]
    result = registered(run("prod", mapping))
    assert not result.of_type(TGW_ATTACHMENT)
    peering = _one(result, PEERING)
    assert (peering.inputs["peerVpcId"], peering.inputs["autoAccept"]) == ("vpc-0fedcba9876543210", True)
    assert peering.inputs["vpcId"] == _ec2_id(_one(result, "aws:ec2/vpc:Vpc"))
    routes = [r for r in result.of_type(ROUTE) if r.inputs["destinationCidrBlock"] == "10.0.8.0/24"]
    assert len(routes) == 3
    assert {r.inputs["vpcPeeringConnectionId"] for r in routes} == {_ec2_id(peering)}


def test_runner_security_group_is_admitted(run) -> None:
    mapping = stack_mapping("prod")
    mapping["hyperpod-inference:cluster"]["deployerAccess"] = {"securityGroupIds": ["sg-0123456789abcdef0"]}
    result = registered(run("prod", mapping))
    rule = _one(result, INGRESS, "eks-api-from-deployer-sg-0")
    assert (rule.inputs["referencedSecurityGroupId"], rule.inputs["fromPort"], rule.inputs["toPort"]) == (
        "sg-0123456789abcdef0",
        443,
        443,
    )
    assert rule.inputs["securityGroupId"] == _ec2_id(_one(result, SG, "eks-cluster-sg"))
    assert not [r for r in result.of_type(INGRESS) if r.name.startswith("eks-api-from-deployer-cidr")]
    assert rule.urn in _one(result, EKS).dependencies


def test_dev_deployer_comes_through_restricted_public_cidrs(stack_runs) -> None:
    run = stack_runs["dev"]
    assert _one(run, EKS).inputs["publicAccessCidrs"] == ["203.0.113.0/24", "198.51.100.7/32"]
    assert not [r for r in run.of_type(INGRESS) if r.name.startswith("eks-api-from-deployer")]


def test_public_access_cidrs_are_none_in_prod_whatever_the_config_lists() -> None:
    """The component's own prod guard (the config refuses public CIDRs in prod first, so no valid stack reaches
    it): given the dev cluster's CIDRs, prod still gets a private-only endpoint."""
    from components.eks_cluster import public_access_cidrs
    from tools.preflight.regional import load_config

    cluster = load_config("dev", stack_mapping("dev")).cluster
    assert public_access_cidrs(cluster, is_prod=False) == ["203.0.113.0/24", "198.51.100.7/32"]
    assert public_access_cidrs(cluster, is_prod=True) == []


# --- CoreDNS and anything else that waits for pods comes after the nodes ------------------------------------


@pytest.mark.parametrize("stack", STACKS)
def test_coredns_is_its_own_addon_after_the_hyperpod_cluster(stack: str, stack_runs) -> None:
    run = stack_runs[stack]
    eks = _one(run, EKS)
    assert eks.inputs["corednsAddonOptions"]["enabled"] is False  # pulumi-eks would wait for it with no nodes
    assert "version" not in eks.inputs["corednsAddonOptions"]
    coredns = _one(run, ADDON, "coredns")
    assert {k: coredns.inputs[k] for k in ("addonName", "addonVersion", "clusterName")} == {
        "addonName": "coredns",
        "addonVersion": "v1.13.2-eksbuild.1",
        "clusterName": f"hpi-{stack}-eks",
    }
    hp = _one(run, HP)
    assert hp.urn in coredns.dependencies
    assert coredns.urn not in _closure(run, hp.urn)


def _closure(run: StackRun, urn: str) -> set[str]:
    """Every URN ``urn`` waits on: its dependencies, property dependencies and parent, and theirs.

    The parent counts because the SDK registers a child only once its parent's URN is known, and a component's
    registration waits for the component's own ``depends_on`` (pulumi ``runtime/resource.py`` ``prepare_resource``).
    """
    by_urn = {r.urn: r for r in run.registrations}
    seen: set[str] = set()
    todo = [urn]
    while todo:
        reg = by_urn.get(todo.pop())
        if reg is None:
            continue
        nxt = set(reg.dependencies) | {u for us in reg.property_dependencies.values() for u in us}
        if reg.parent:
            nxt.add(reg.parent)
        for dep in nxt - seen:
            seen.add(dep)
            todo.append(dep)
    return seen


# Add-ons whose controllers are Deployments (ACTIVE needs running pods); DaemonSet add-ons are ACTIVE with no nodes.
POD_ADDONS = {
    "coredns",
    "metrics-server",
    "cert-manager",
    "aws-fsx-csi-driver",
    "aws-mountpoint-s3-csi-driver",
    "amazon-sagemaker-hyperpod-inference",
    "amazon-sagemaker-hyperpod-observability",  # collectors and exporters run as pods (docs/edge-and-observability.md)
}
NODELESS_OK_ADDONS = {"eks-pod-identity-agent"}


def _waits_for_pods(reg: Registration) -> bool:
    if reg.type == ADDON:
        name = reg.inputs["addonName"]
        assert name in POD_ADDONS | NODELESS_OK_ADDONS, f"classify add-on {name}"
        return name in POD_ADDONS
    if reg.type == RELEASE:
        return reg.inputs.get("skipAwait") is not True
    return False


@pytest.mark.parametrize("variant", ["dev", "prod", "prod-helm-mode"])
def test_nothing_that_waits_for_pods_comes_before_the_nodes(variant: str, stack_runs, run) -> None:
    """The rule for the whole program: whatever waits for running pods is ordered after the HyperPod cluster (the
    only source of nodes), and the HyperPod cluster waits on nothing that waits for pods."""
    if variant == "prod-helm-mode":
        mapping = stack_mapping("prod")
        mapping["hyperpod-inference:operator"]["loadBalancerController"] = {"mode": "helm", "chartVersion": "1.13.2"}
        result = registered(run("prod", mapping))
    else:
        result = stack_runs[variant]
    hp = _one(result, HP)
    waiting = [r for r in result.registrations if _waits_for_pods(r)]
    assert {r.inputs.get("addonName", r.name) for r in waiting} >= {"coredns", "amazon-sagemaker-hyperpod-inference"}
    if variant == "prod-helm-mode":
        assert any(r.type == RELEASE for r in waiting), "the LB controller Helm release waits (atomic)"
    for reg in waiting:
        assert hp.urn in _closure(result, reg.urn), f"{reg.type} {reg.name} does not wait for the HyperPod cluster"
    before_nodes = _closure(result, hp.urn)
    assert [r.name for r in waiting if r.urn in before_nodes] == []


# --- subnets and instance groups ---------------------------------------------------------------------------


@pytest.mark.parametrize("stack", STACKS)
def test_one_private_subnet_per_configured_az_id(stack: str, stack_runs) -> None:
    run = stack_runs[stack]
    azs = stack_mapping(stack)["hyperpod-inference:network"]["availabilityZoneIds"]
    private = [r for r in run.of_type("aws:ec2/subnet:Subnet") if "-private-" in r.name]
    assert sorted(r.inputs["availabilityZoneId"] for r in private) == sorted(azs)
    hp = _one(run, HP)
    subnet_az = _subnet_az(run)
    # the create-only cluster-level VpcConfig names the first AZ's subnet only; each group carries its own
    # (OverrideVpcConfig is not create-only), so a new AZ does not replace the cluster
    assert [subnet_az[s] for s in hp.inputs["vpcConfig"]["subnets"]] == [azs[0]]
    group_azs = {subnet_az[g["overrideVpcConfig"]["subnets"][0]] for g in hp.inputs["instanceGroups"]}
    assert group_azs <= set(azs)


EXPECTED_GROUPS = {
    "dev": [
        ("system", "ml.m5.2xlarge", 2, "usw2-az1", []),
        ("gpu-p5", "ml.p5.4xlarge", 1, "usw2-az2", ["InstanceStress"]),
    ],
    # GPU groups default to role inference: InstanceStress only; InstanceConnectivity (NCCL between instances) is
    # what multi-node training uses (components/config/health_checks.py).
    "prod": [
        ("system", "ml.m5.2xlarge", 2, "use1-az2", []),
        ("p5-inference", "ml.p5.48xlarge", 4, "use1-az4", ["InstanceStress"]),
        ("p6-inference", "ml.p6-b200.48xlarge", 4, "use1-az6", ["InstanceStress"]),
        # the controllers' second AZ (capacity rule controllers-span-zones)
        ("system-b", "ml.m5.2xlarge", 1, "use1-az4", []),
    ],
    "staging": [
        ("system", "ml.m5.2xlarge", 2, "euw2-az1", []),
        ("gpu-p5", "ml.p5.4xlarge", 3, "euw2-az2", ["InstanceStress"]),
    ],
}


@pytest.mark.parametrize("stack", STACKS)
def test_instance_groups_as_configured(stack: str, stack_runs) -> None:
    run = stack_runs[stack]
    hp = _one(run, HP)
    sg_id = _node_sg_id(run)
    role_arn = _one(run, "aws:iam/role:Role", "hyperpod-execution-role").outputs["arn"]
    bucket = _one(run, "aws:s3/bucket:Bucket", "hyperpod-lifecycle").outputs["bucket"]
    subnet_az = _subnet_az(run)
    got = []
    for g in hp.inputs["instanceGroups"]:
        vpc = g["overrideVpcConfig"]
        assert vpc["securityGroupIds"] == [sg_id] and len(vpc["subnets"]) == 1
        assert g["executionRole"] == role_arn
        assert g["threadsPerCore"] == 1
        assert g["instanceStorageConfigs"] == [{"ebsVolumeConfig": {"volumeSizeInGb": 500}}]
        assert g["lifeCycleConfig"] == {"sourceS3Uri": f"s3://{bucket}/lifecycle/", "onCreate": "on_create.sh"}
        got.append(
            (
                g["instanceGroupName"],
                g["instanceType"],
                g["instanceCount"],
                subnet_az[vpc["subnets"][0]],
                g.get("onStartDeepHealthChecks", []),
            )
        )
    assert got == EXPECTED_GROUPS[stack]
    assert hp.inputs["nodeRecovery"] == "Automatic"
    assert hp.inputs["vpcConfig"]["securityGroupIds"] == [sg_id]


def test_prod_group_labels_and_dev_taints_training_plan(stack_runs, run) -> None:
    prod = {g["instanceGroupName"]: g for g in _one(stack_runs["prod"], HP).inputs["instanceGroups"]}
    assert prod["p5-inference"]["kubernetesConfig"] == {"labels": {"workload": "inference"}}
    assert "kubernetesConfig" not in prod["system"]

    mapping = stack_mapping("dev")
    gpu = mapping["hyperpod-inference:cluster"]["instanceGroups"][1]
    gpu["taints"] = [{"key": "nvidia.com/gpu", "value": "true", "effect": "NoSchedule"}]
    gpu["trainingPlanArn"] = "arn:aws:sagemaker:us-west-2:123456789012:training-plan/p5-dev"
    gpu["threadsPerCore"] = 2
    gpu["onStartDeepHealthChecks"] = ["InstanceStress"]
    mapping["hyperpod-inference:cluster"]["nodeProvisioningMode"] = "Continuous"
    hp = _one(registered(run("dev", mapping)), HP)
    g = hp.inputs["instanceGroups"][1]
    assert g["kubernetesConfig"] == {"taints": [{"key": "nvidia.com/gpu", "value": "true", "effect": "NoSchedule"}]}
    assert g["trainingPlanArn"] == "arn:aws:sagemaker:us-west-2:123456789012:training-plan/p5-dev"
    assert g["threadsPerCore"] == 2
    assert g["onStartDeepHealthChecks"] == ["InstanceStress"]
    assert hp.inputs["nodeProvisioningMode"] == "Continuous"
    assert "nodeProvisioningMode" not in _one(stack_runs["dev"], HP).inputs


def test_tiered_storage_follows_kv_cache_backend(stack_runs) -> None:
    assert _one(stack_runs["dev"], HP).inputs["tieredStorageConfig"] == {
        "mode": "Enable",
        "instanceMemoryAllocationPercentage": 20,
    }
    assert "tieredStorageConfig" not in _one(stack_runs["prod"], HP).inputs  # prod uses redis


# --- EKS ---------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("stack", STACKS)
def test_eks_cluster_inputs(stack: str, stack_runs) -> None:
    run = stack_runs[stack]
    eks = _one(run, EKS)
    i = eks.inputs
    key = _one(run, "aws:kms/key:Key", "eks-secrets-key")
    assert key.inputs["enableKeyRotation"] is True
    assert i["name"] == f"hpi-{stack}-eks"
    assert i["version"] == "1.35"
    assert i["authenticationMode"] == "API_AND_CONFIG_MAP"
    assert i["createOidcProvider"] is True
    assert i["skipDefaultNodeGroup"] is True
    assert i["endpointPrivateAccess"] is True
    assert i["encryptionConfigKeyArn"] == key.outputs["arn"]
    assert i["enabledClusterLogTypes"] == ["api", "audit", "authenticator", "controllerManager", "scheduler"]
    assert i["kubernetesServiceIpAddressRange"] == "172.20.0.0/16"
    assert i["vpcCniOptions"]["addonVersion"] == "v1.20.0-eksbuild.1"
    assert i["kubeProxyAddonOptions"]["version"] == "v1.35.0-eksbuild.2"
    subnet_az = _subnet_az(run)
    assert sorted(subnet_az[s] for s in i["privateSubnetIds"]) == sorted(
        stack_mapping(stack)["hyperpod-inference:network"]["availabilityZoneIds"]
    )
    if stack == "prod":
        assert i["endpointPublicAccess"] is False and "publicAccessCidrs" not in i
        assert i["deletionProtection"] is True
    else:
        assert i["endpointPublicAccess"] is True and i["publicAccessCidrs"] == ["203.0.113.0/24", "198.51.100.7/32"]
        assert i["deletionProtection"] is False
    agent = _one(run, "aws:eks/addon:Addon", "eks-pod-identity-agent")
    assert (agent.inputs["addonName"], agent.inputs["addonVersion"], agent.inputs["clusterName"]) == (
        "eks-pod-identity-agent",
        "v1.3.7-eksbuild.2",
        f"hpi-{stack}-eks",
    )


def test_dev_without_public_cidrs_keeps_endpoint_private(run) -> None:
    mapping = stack_mapping("dev")
    mapping["hyperpod-inference:cluster"]["endpointPublicAccessCidrs"] = []
    mapping["hyperpod-inference:cluster"]["deployerAccess"] = {"cidrs": ["10.192.0.0/19"]}
    eks = _one(registered(run("dev", mapping)), EKS)
    assert eks.inputs["endpointPublicAccess"] is False and "publicAccessCidrs" not in eks.inputs


def test_kubernetes_provider_uses_the_cluster_kubeconfig(stack_runs) -> None:
    run = stack_runs["dev"]
    provider = _one(run, "pulumi:providers:kubernetes", "eks-k8s")
    raw = provider.inputs["kubeconfig"]
    # The kubeconfig reaches the provider as a Pulumi secret (the engine's secret envelope).
    assert isinstance(raw, dict) and "4dabf18193072939515e22adb298388d" in raw, "kubeconfig must be secret"
    kubeconfig = json.loads(raw["value"])
    assert kubeconfig["users"][0]["user"]["exec"]["args"][-3] == "hpi-dev-eks"


def test_hyperpod_orchestrated_by_this_eks_cluster(stack_runs) -> None:
    run = stack_runs["prod"]
    assert _one(run, HP).inputs["orchestrator"] == {
        "eks": {"clusterArn": "arn:aws:eks:us-east-1:123456789012:cluster/hpi-prod-eks"}
    }
    assert run.outputs["eksClusterName"] == "hpi-prod-eks"
    assert run.outputs["hyperpodClusterArn"] == _one(run, HP).outputs["clusterArn"]


# --- HyperPod dependencies chart ---------------------------------------------------------------------------


OLD_PIN = "1504d53b28a6de4449c0fcdf9d56b8c87f28283f"  # refs/pull/276/merge: on no branch of aws/sagemaker-hyperpod-cli


def test_hyperpod_dependencies_chart_pinned_and_before_the_cluster(stack_runs) -> None:
    run = stack_runs["dev"]
    rel = _one(run, RELEASE, "hyperpod-deps-release")
    assert rel.inputs["name"] == RELEASE_NAME and rel.inputs["namespace"] == "kube-system"
    assert rel.inputs["chart"] == "vendor/sagemaker-hyperpod-cli/helm_chart/HyperPodHelmChart"
    assert rel.inputs["description"] == (
        "aws/sagemaker-hyperpod-cli@b01cf90676553a711ab1a8ac51422adbb09aef6b helm_chart/HyperPodHelmChart"
    )
    # No waiting: nothing in the chart can run before the HyperPod cluster (which depends on it) brings nodes.
    assert rel.inputs["skipAwait"] is True
    assert "atomic" not in rel.inputs and "waitForJobs" not in rel.inputs
    assert rel.inputs["dependencyUpdate"] is True
    values = rel.inputs["values"]
    assert values["health-monitoring-agent"] == {"enabled": True, "region": "us-west-2"}
    assert values["inferenceOperators"] == {"enabled": False}  # the operator is an EKS add-on (issue 4)
    assert values["cert-manager"] == {"enabled": False}
    # training-only sub-charts are off by default; what inference nodes need stays on
    assert (values["trainingOperators"], values["mpi-operator"], values["job-auto-restart"]) == (
        {"enabled": False},
        {"enabled": False},
        {"enabled": False},
    )
    assert values["deep-health-check"] == values["hyperpod-patching"] == {"enabled": True}
    for plugin in ("nvidia-device-plugin", "aws-efa-k8s-device-plugin", "neuron-device-plugin"):
        assert values[plugin] == {"devicePlugin": {"enabled": True}}, plugin
    assert rel.provider is not None and "eks-k8s" in rel.provider
    # depends_on a component expands to its children: the HyperPod layer waits for the release itself.
    component = _one(run, "hyperpod:hyperpod_cluster:HyperPodCluster")
    assert rel.urn in component.dependencies
    assert rel.urn in _closure(run, _one(run, HP).urn)


def test_training_sub_charts_can_be_turned_on(run) -> None:
    mapping = stack_mapping("dev")
    mapping["hyperpod-inference:cluster"]["hyperpodDependencies"] = {
        "trainingOperators": True,
        "mpiOperator": True,
        "jobAutoRestart": True,
    }
    values = _one(registered(run("dev", mapping)), RELEASE, "hyperpod-deps-release").inputs["values"]
    assert (values["trainingOperators"], values["mpi-operator"], values["job-auto-restart"]) == (
        {"enabled": True},
        {"enabled": True},
        {"enabled": True},
    )


def test_chart_pin_is_a_reviewed_commit_on_main_not_the_pull_request_merge() -> None:
    """The pin must be in the reviewed list, each entry with its ancestry proof; the old PR test-merge is not."""
    assert HYPERPOD_CLI_COMMIT == "b01cf90676553a711ab1a8ac51422adbb09aef6b"
    assert HYPERPOD_CLI_COMMIT in REVIEWED_CHART_COMMITS
    assert OLD_PIN not in REVIEWED_CHART_COMMITS
    assert all("main" in proof for proof in REVIEWED_CHART_COMMITS.values())
    assert "merge-base --is-ancestor" in REVIEWED_CHART_COMMITS[HYPERPOD_CLI_COMMIT]
    with pytest.raises(ValueError, match="is not a reviewed aws/sagemaker-hyperpod-cli commit"):
        HyperPodDependenciesConfig(git_commit=OLD_PIN)


# --- lifecycle bucket, IAM, protection ---------------------------------------------------------------------


def test_lifecycle_scripts_are_the_repos_own(stack_runs) -> None:
    run = stack_runs["dev"]
    bucket = _one(run, "aws:s3/bucket:Bucket", "hyperpod-lifecycle")
    objects = [o for o in run.of_type("aws:s3/bucketObject:BucketObject") if o.name.startswith("hyperpod-lifecycle-")]
    shipped = {p.name: p.read_text(encoding="utf-8") for p in LIFECYCLE_DIR.glob("*.sh")}
    assert "on_create.sh" in shipped
    assert {o.inputs["key"]: o.inputs["content"] for o in objects} == {f"lifecycle/{k}": v for k, v in shipped.items()}
    assert all(o.inputs["bucket"] == bucket.outputs["bucket"] for o in objects)


@pytest.mark.parametrize("stack", STACKS)
def test_lifecycle_bucket_is_private_encrypted_versioned_tls_only(stack: str, stack_runs) -> None:
    run = stack_runs[stack]
    bucket_id = _one(run, "aws:s3/bucket:Bucket", "hyperpod-lifecycle").outputs["bucket"]
    assert bucket_id == f"sagemaker-hpi-{stack}-lifecycle-123456789012"
    pab = _one(run, "aws:s3/bucketPublicAccessBlock:BucketPublicAccessBlock", "hyperpod-lifecycle-public-access").inputs
    assert all(
        pab[k] is True for k in ("blockPublicAcls", "blockPublicPolicy", "ignorePublicAcls", "restrictPublicBuckets")
    )
    sse = _one(
        run,
        "aws:s3/bucketServerSideEncryptionConfiguration:BucketServerSideEncryptionConfiguration",
        "hyperpod-lifecycle-sse",
    )
    assert sse.inputs["rules"][0]["applyServerSideEncryptionByDefault"]["sseAlgorithm"] == "AES256"
    ver = _one(run, "aws:s3/bucketVersioning:BucketVersioning", "hyperpod-lifecycle-versioning").inputs
    assert ver["versioningConfiguration"]["status"] == "Enabled"
    policy = json.loads(_one(run, "aws:s3/bucketPolicy:BucketPolicy", "hyperpod-lifecycle-policy").inputs["policy"])
    deny = policy["Statement"][0]
    assert deny["Effect"] == "Deny" and deny["Condition"] == {"Bool": {"aws:SecureTransport": "false"}}
    own = _one(run, "aws:s3/bucketOwnershipControls:BucketOwnershipControls", "hyperpod-lifecycle-ownership").inputs
    assert own["rule"]["objectOwnership"] == "BucketOwnerEnforced"


def test_execution_role_trusts_sagemaker_with_the_documented_policies(stack_runs) -> None:
    run = stack_runs["prod"]
    role = _one(run, "aws:iam/role:Role", "hyperpod-execution-role")
    trust = json.loads(role.inputs["assumeRolePolicy"])
    assert trust["Statement"] == [
        {
            "Effect": "Allow",
            "Principal": {"Service": "sagemaker.amazonaws.com"},
            "Action": "sts:AssumeRole",
        }
    ]
    attached = [r.inputs["policyArn"] for r in run.of_type("aws:iam/rolePolicyAttachment:RolePolicyAttachment")]
    assert "arn:aws:iam::aws:policy/AmazonSageMakerClusterInstanceRolePolicy" in attached
    inline = json.loads(_one(run, "aws:iam/rolePolicy:RolePolicy", "hyperpod-execution-inline").inputs["policy"])
    actions = {a for s in inline["Statement"] for a in ([s["Action"]] if isinstance(s["Action"], str) else s["Action"])}
    assert not any(a.endswith("*") for a in actions), "no wildcard actions"
    s3 = next(s for s in inline["Statement"] if s["Sid"] == "ReadLifecycleScripts")
    assert s3["Resource"] == [
        "arn:aws:s3:::sagemaker-hpi-prod-lifecycle-123456789012",
        "arn:aws:s3:::sagemaker-hpi-prod-lifecycle-123456789012/*",
    ]


def _findings_above_low(doc: dict[str, Any]) -> list[str]:
    out = []
    is_trust = all(
        str(a).startswith("sts:AssumeRole")
        for s in doc["Statement"]
        for a in ([s["Action"]] if isinstance(s["Action"], str) else s["Action"])
    )
    for f in analyze_policy_string(json.dumps(doc)).findings:
        enhance_finding(f)
        if is_trust and f.issue == "MALFORMED":  # parliament lints trust policies as identity policies
            continue
        if SEVERITY.get(f.severity, 4) > SEVERITY["LOW"]:
            out.append(f"{f.severity} {f.issue}: {f.detail}")
    return out


@pytest.mark.parametrize("stack", STACKS)
def test_iam_policies_pass_parliament(stack: str, stack_runs) -> None:
    run = stack_runs[stack]
    docs = [
        (
            "execution trust",
            json.loads(_one(run, "aws:iam/role:Role", "hyperpod-execution-role").inputs["assumeRolePolicy"]),
        ),
        (
            "execution inline",
            json.loads(_one(run, "aws:iam/rolePolicy:RolePolicy", "hyperpod-execution-inline").inputs["policy"]),
        ),
        (
            "lifecycle bucket",
            json.loads(_one(run, "aws:s3/bucketPolicy:BucketPolicy", "hyperpod-lifecycle-policy").inputs["policy"]),
        ),
        ("execution inline (gov partition)", execution_role_policy("arn:aws-us-gov:s3:::b", "aws-us-gov")),
    ]
    for where, doc in docs:
        assert _findings_above_low(doc) == [], where


def test_parliament_check_is_not_vacuous() -> None:
    bad = {
        "Version": "2012-10-17",
        "Statement": [{"Effect": "Allow", "Action": "s3:GetObject", "Resource": "arn:aws:ec2:*:*:instance/*"}],
    }
    assert _findings_above_low(bad)


STATEFUL = [
    ("aws-native:sagemaker:Cluster", "hyperpod-cluster"),
    ("aws:s3/bucket:Bucket", "hyperpod-lifecycle"),
    ("aws:kms/key:Key", "eks-secrets-key"),
]


@pytest.mark.parametrize("stack", STACKS)
def test_deletion_protection_only_in_prod(stack: str, stack_runs) -> None:
    run = stack_runs[stack]
    prod = stack == "prod"
    for typ, name in STATEFUL:
        assert _one(run, typ, name).protect is prod, f"{typ} {name}"
    assert _one(run, "aws:s3/bucket:Bucket", "hyperpod-lifecycle").inputs["forceDestroy"] is (not prod)


def test_no_duplicate_resource_names(stack_runs) -> None:
    for run in stack_runs.values():
        pairs = [(r.type, r.name) for r in run.registrations]
        assert len(pairs) == len(set(pairs))


def test_efa_self_rule_policy_passes_and_catches_a_missing_egress_rule(stack_runs) -> None:
    """The pack's efa-security-group-self-rules policy reads these standalone rules correctly."""
    from policies.engine import evaluate
    from policies.pack import POLICIES

    run = stack_runs["dev"]

    def efa(regs: list[Registration]) -> list[str]:
        return [r.message for r in evaluate(POLICIES, regs, "dev") if "self-referencing" in r.message]

    assert efa(run.registrations) == []
    without_egress = [r for r in run.registrations if r.name != "node-sg-self-egress"]
    assert len(without_egress) == len(run.registrations) - 1
    assert any("egress" in m for m in efa(without_egress))


# --- getting GPUs: partial and continuous provisioning (issue 47 item 10) ---------------------------------------


def test_prod_asks_for_partial_and_continuous_provisioning_and_up_waits_for_the_minimum(stack_runs) -> None:
    prod = stack_runs["prod"]
    (cluster,) = prod.of_type("aws-native:sagemaker:Cluster")
    assert cluster.inputs["nodeProvisioningMode"] == "Continuous"
    groups = {g["instanceGroupName"]: g for g in cluster.inputs["instanceGroups"]}
    assert (groups["p5-inference"]["instanceCount"], groups["p5-inference"]["minInstanceCount"]) == (4, 2)
    assert "minInstanceCount" not in groups["system"]  # unset: every instance before InService
    (wait,) = [
        r
        for r in prod.of_type("pulumi-python:dynamic:Resource")
        if r.inputs.get("resourceKind") == "hyperpod:HyperPodNodeWait"
    ]
    # `up` is serving once each group has its minimum (the rest keep coming under Continuous provisioning)
    assert wait.inputs["groups"] == {"system": 2, "p5-inference": 2, "p6-inference": 2, "system-b": 1}


def test_min_instance_count_above_instance_count_is_refused(run) -> None:
    mapping = stack_mapping("prod")
    mapping["hyperpod-inference:cluster"]["instanceGroups"][1]["minInstanceCount"] = 5
    result = run("prod", mapping)
    assert result.config_error is not None
    assert [i.render() for i in result.config_error.issues] == [
        "hyperpod-inference:cluster.instanceGroups[1].minInstanceCount: 5 is more than instanceCount 4; allowed: 0 to 4"
    ]
    mapping["hyperpod-inference:cluster"]["instanceGroups"][1]["minInstanceCount"] = 4  # equal: holds
    assert run("prod", mapping).config_error is None
