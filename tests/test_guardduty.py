"""GuardDuty's VPC endpoint on destroy (issue 23 item 7): the cleanup tool and the preflight check against botocore's
Stubber (the real ec2 and guardduty service models validate every request and response), and the destroy rehearsal
listing the risk as what it is: unknown offline."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import boto3
import pytest
from botocore.stub import Stubber

from tests.conftest import stack_mapping
from tools.preflight import checks as pc
from tools.preflight import guardduty_cleanup as gdc
from tools.preflight.regional import load_config
from tools.rehearse import rehearse

VPC = "vpc-0a1b2c3d4e5f60718"
ENDPOINT = "vpce-0a1b2c3d4e5f60718"
GD_SG = "sg-0a1b2c3d4e5f6aa01"
OTHER_SG = "sg-0a1b2c3d4e5f60999"
TAG = [{"Key": "GuardDutyManaged", "Value": "true"}]
ENDPOINT_FILTERS = {
    "Filters": [
        {"Name": "vpc-id", "Values": [VPC]},
        {
            "Name": "service-name",
            "Values": ["com.amazonaws.us-east-1.guardduty-data", "com.amazonaws.us-east-1.guardduty-data-fips"],
        },
        {"Name": "tag-key", "Values": ["GuardDutyManaged"]},
    ]
}


class FakeTime:
    def __init__(self) -> None:
        self.now = 0.0
        self.sleeps: list[float] = []

    def sleep(self, seconds: float) -> None:
        self.sleeps.append(seconds)
        self.now += seconds

    def clock(self) -> float:
        return self.now


@pytest.fixture
def ec2() -> Iterator[tuple[Any, Stubber]]:
    client = boto3.client("ec2", region_name="us-east-1", aws_access_key_id="testing", aws_secret_access_key="testing")
    stub = Stubber(client)
    with stub:
        yield client, stub
        stub.assert_no_pending_responses()


def endpoint(*groups: str) -> dict[str, Any]:
    return {
        "VpcEndpointId": ENDPOINT,
        "VpcId": VPC,
        "ServiceName": "com.amazonaws.us-east-1.guardduty-data",
        "Groups": [{"GroupId": g, "GroupName": f"GuardDutyManagedSecurityGroup-{VPC}"} for g in groups],
        "Tags": TAG,
    }


def groups(*pairs: tuple[str, bool]) -> dict[str, Any]:
    return {
        "SecurityGroups": [
            {"GroupId": g, "GroupName": g, "VpcId": VPC, "Tags": TAG if tagged else []} for g, tagged in pairs
        ]
    }


def test_cleanup_deletes_the_endpoint_waits_for_its_interfaces_then_its_group(ec2) -> None:
    client, stub = ec2
    stub.add_response("describe_vpc_endpoints", {"VpcEndpoints": [endpoint(GD_SG, OTHER_SG)]}, ENDPOINT_FILTERS)
    stub.add_response(
        "describe_security_groups", groups((GD_SG, True), (OTHER_SG, False)), {"GroupIds": sorted([GD_SG, OTHER_SG])}
    )
    stub.add_response("delete_vpc_endpoints", {"Unsuccessful": []}, {"VpcEndpointIds": [ENDPOINT]})
    eni_filter = {"Filters": [{"Name": "group-id", "Values": [GD_SG]}]}
    stub.add_response(
        "describe_network_interfaces",
        {"NetworkInterfaces": [{"NetworkInterfaceId": "eni-0a1b2c3d4e5f60718"}]},
        eni_filter,
    )
    stub.add_response("describe_network_interfaces", {"NetworkInterfaces": []}, eni_filter)
    stub.add_response("delete_security_group", {}, {"GroupId": GD_SG})
    fake, logs = FakeTime(), []
    result = gdc.cleanup(client, VPC, "us-east-1", sleep=fake.sleep, clock=fake.clock, log=logs.append)
    assert (result.endpoints, result.security_groups) == ([ENDPOINT], [GD_SG])
    assert fake.sleeps == [5.0]
    assert logs == [
        f"{VPC}: deleting GuardDuty VPC endpoints {ENDPOINT}",
        f"{VPC}: 1 network interface(s) of the endpoints still attached, waiting",
        f"{VPC}: deleting GuardDuty security group {GD_SG}",
        f"{VPC}: left {OTHER_SG} alone (no GuardDutyManaged tag: not GuardDuty's)",
    ]


def test_nothing_to_clean(ec2) -> None:
    client, stub = ec2
    stub.add_response("describe_vpc_endpoints", {"VpcEndpoints": []}, ENDPOINT_FILTERS)
    logs: list[str] = []
    result = gdc.cleanup(client, VPC, "us-east-1", log=logs.append)
    assert result.endpoints == [] and logs == [f"{VPC}: no GuardDuty-managed VPC endpoint, nothing to do"]


def test_pages_of_endpoints_are_followed_and_untagged_ones_ignored(ec2) -> None:
    client, stub = ec2
    untagged = {**endpoint(), "VpcEndpointId": "vpce-0fffffffffffffff1", "Tags": []}
    stub.add_response("describe_vpc_endpoints", {"VpcEndpoints": [untagged], "NextToken": "n1"}, ENDPOINT_FILTERS)
    stub.add_response("describe_vpc_endpoints", {"VpcEndpoints": [endpoint()]}, {**ENDPOINT_FILTERS, "NextToken": "n1"})
    logs: list[str] = []
    result = gdc.cleanup(client, VPC, "us-east-1", dry_run=True, log=logs.append)
    assert result.endpoints == [ENDPOINT] and result.dry_run
    assert logs == [f"{VPC}: would delete VPC endpoints {ENDPOINT} and security groups none"]


def test_dry_run_deletes_nothing(ec2) -> None:
    client, stub = ec2
    stub.add_response("describe_vpc_endpoints", {"VpcEndpoints": [endpoint(GD_SG)]}, ENDPOINT_FILTERS)
    stub.add_response("describe_security_groups", groups((GD_SG, True)), {"GroupIds": [GD_SG]})
    logs: list[str] = []
    result = gdc.cleanup(client, VPC, "us-east-1", dry_run=True, log=logs.append)
    assert result.security_groups == [GD_SG]
    assert logs == [f"{VPC}: would delete VPC endpoints {ENDPOINT} and security groups {GD_SG}"]


def test_refused_endpoint_deletion_is_one_error(ec2) -> None:
    client, stub = ec2
    stub.add_response("describe_vpc_endpoints", {"VpcEndpoints": [endpoint()]}, ENDPOINT_FILTERS)
    stub.add_response(
        "delete_vpc_endpoints",
        {
            "Unsuccessful": [
                {"ResourceId": ENDPOINT, "Error": {"Code": "InvalidVpcEndpoint.NotFound", "Message": "gone"}}
            ]
        },
        {"VpcEndpointIds": [ENDPOINT]},
    )
    with pytest.raises(
        gdc.CleanupError, match=f"^DeleteVpcEndpoints refused {ENDPOINT}: InvalidVpcEndpoint.NotFound gone$"
    ):
        gdc.cleanup(client, VPC, "us-east-1", log=lambda _: None)


def test_interfaces_that_stay_time_out(ec2) -> None:
    client, stub = ec2
    stub.add_response("describe_vpc_endpoints", {"VpcEndpoints": [endpoint(GD_SG)]}, ENDPOINT_FILTERS)
    stub.add_response("describe_security_groups", groups((GD_SG, True)), {"GroupIds": [GD_SG]})
    stub.add_response("delete_vpc_endpoints", {"Unsuccessful": []}, {"VpcEndpointIds": [ENDPOINT]})
    for _ in range(3):  # at 0, 5 and 10 s
        stub.add_response(
            "describe_network_interfaces",
            {"NetworkInterfaces": [{"NetworkInterfaceId": "eni-0a1b2c3d4e5f60718"}]},
            {"Filters": [{"Name": "group-id", "Values": [GD_SG]}]},
        )
    fake = FakeTime()
    with pytest.raises(gdc.CleanupError) as err:
        gdc.cleanup(client, VPC, "us-east-1", timeout=10, sleep=fake.sleep, clock=fake.clock, log=lambda _: None)
    assert str(err.value) == (
        f"1 network interface(s) of {GD_SG} still exist after 10s; rerun when they are gone (the endpoints are deleted)"
    )


def test_the_stack_vpc_is_found_by_its_tags(ec2) -> None:
    client, stub = ec2
    tags = {
        "Filters": [
            {"Name": "tag:hyperpod-inference:stack", "Values": ["prod"]},
            {"Name": "tag:managed-by", "Values": ["pulumi"]},
        ]
    }
    stub.add_response("describe_vpcs", {"Vpcs": [{"VpcId": VPC}]}, tags)
    assert gdc.stack_vpc(client, "prod") == VPC
    stub.add_response("describe_vpcs", {"Vpcs": []}, tags)
    with pytest.raises(gdc.CleanupError, match=r"0 VPCs are tagged hyperpod-inference:stack=prod, managed-by=pulumi"):
        gdc.stack_vpc(client, "prod")


def test_cli_names_the_denied_action_and_the_missing_stack(ec2, capsys) -> None:
    client, stub = ec2
    stub.add_client_error("describe_vpc_endpoints", service_error_code="UnauthorizedOperation", http_status_code=403)
    assert gdc.main(["--stack", "prod", "--vpc-id", VPC], ec2=client) == 1
    assert capsys.readouterr().out.startswith(
        "access denied: grant ec2:DescribeVpcEndpoints to the credentials running the cleanup"
    )
    assert gdc.main(["--stack", "nosuchstack"]) == 2
    assert "no stack file" in capsys.readouterr().out


# --- preflight: is GuardDuty going to add the endpoint? -------------------------------------------------------


def _clients() -> tuple[pc.Clients, Stubber]:
    session = boto3.Session(aws_access_key_id="testing", aws_secret_access_key="testing", region_name="us-east-1")
    clients = pc.Clients(session, "us-east-1")
    return clients, Stubber(clients("guardduty"))


def _detector(runtime: str, addon: str) -> dict[str, Any]:
    return {
        "ServiceRole": "arn:aws:iam::123456789012:role/aws-service-role/guardduty.amazonaws.com/AWSServiceRoleForAmazonGuardDuty",
        "Status": "ENABLED",
        "Features": [
            {
                "Name": "RUNTIME_MONITORING",
                "Status": runtime,
                "AdditionalConfiguration": [{"Name": "EKS_ADDON_MANAGEMENT", "Status": addon}],
            }
        ],
    }


def test_preflight_warns_when_guardduty_manages_the_eks_agent() -> None:
    cfg = load_config("prod", stack_mapping("prod"))
    clients, stub = _clients()
    with stub:
        stub.add_response("list_detectors", {"DetectorIds": ["d1"], "NextToken": "t"}, {})
        stub.add_response("list_detectors", {"DetectorIds": ["d2"]}, {"NextToken": "t"})
        stub.add_response("get_detector", _detector("ENABLED", "DISABLED"), {"DetectorId": "d1"})
        stub.add_response("get_detector", _detector("ENABLED", "ENABLED"), {"DetectorId": "d2"})
        results = pc.check_guardduty(clients, cfg)
        stub.assert_no_pending_responses()
    assert [(r.status, r.detail, r.action) for r in results] == [
        (
            "WARN",
            "GuardDuty detector d2 runs EKS Runtime Monitoring with automated agent configuration: it will add a "
            "guardduty-data VPC endpoint and a security group to the stack's VPC, which block deleting its subnets, "
            "security groups and the VPC",
            "`pulumi destroy` removes them after the EKS cluster (guardduty-endpoint-cleanup); if a destroy stops on "
            "the subnets, run `python -m tools.preflight.guardduty_cleanup --stack prod` and destroy again",
        )
    ]


@pytest.mark.parametrize(
    ("detectors", "detail"),
    [
        ([], "no GuardDuty detector in us-east-1"),
        (
            [("d1", _detector("DISABLED", "ENABLED"))],
            "GuardDuty detector d1 does not manage the EKS agent: it adds no VPC endpoint",
        ),
    ],
)
def test_preflight_passes_without_automated_agent_configuration(detectors, detail) -> None:
    cfg = load_config("prod", stack_mapping("prod"))
    clients, stub = _clients()
    with stub:
        stub.add_response("list_detectors", {"DetectorIds": [d for d, _ in detectors]}, {})
        for d, body in detectors:
            stub.add_response("get_detector", body, {"DetectorId": d})
        results = pc.check_guardduty(clients, cfg)
    assert [(r.status, r.detail) for r in results] == [("PASS", detail)]


def test_preflight_guardduty_denied_and_adopted_vpc() -> None:
    cfg = load_config("prod", stack_mapping("prod"))
    clients, stub = _clients()
    with stub:
        stub.add_client_error("list_detectors", service_error_code="AccessDeniedException", http_status_code=403)
        results = pc.check_guardduty(clients, cfg)
    assert [(r.status, r.action) for r in results] == [
        ("FAIL", "grant guardduty:ListDetectors to the credentials running preflight (read-only), then rerun")
    ]
    attach = load_config("attach", stack_mapping("attach"))
    assert [r.status for r in pc.check_guardduty(clients, attach)] == ["SKIP"]


# --- the destroy rehearsal lists it -----------------------------------------------------------------------------


def test_destroy_rehearsal_lists_the_guardduty_endpoint_risk_as_unknown(stack_runs) -> None:
    """Without the destroy-time cleanup (issue 33 item 6 reverted) the rehearsal names the manual step."""
    regs = [r for r in stack_runs["prod"].registrations if r.name != "guardduty-endpoint-cleanup"]
    assert len(regs) == len(stack_runs["prod"].registrations) - 1
    result = rehearse(regs, mapping=stack_mapping("prod"), stack="prod", destroy=True)
    assert result.converges  # unknown offline: a note, not a finding
    notes = [n for n in result.notes if n.startswith("GuardDuty (cannot be known offline)")]
    assert len(notes) == 1
    assert notes[0].startswith(
        "GuardDuty (cannot be known offline): with EKS Runtime Monitoring and automated agent configuration on, "
        "GuardDuty adds a VPC endpoint (com.amazonaws.<region>.guardduty-data) and a security group to network-vpc; "
        "they block deleting its subnets, security groups and the VPC. Checked by python -m tools.preflight.regional "
        "(guardduty:ListDetectors, guardduty:GetDetector"
    )
    assert "run python -m tools.preflight.guardduty_cleanup --stack prod [ADT main.tf:367-385" in notes[0]
    # a stack that deletes no VPC has nothing of the kind
    attach = rehearse(stack_runs["attach"], mapping=stack_mapping("attach"), destroy=True)
    assert not [n for n in attach.notes if n.startswith("GuardDuty")]
