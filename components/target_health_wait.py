"""TargetHealthWait: a Pulumi dynamic resource that waits until the front door has a healthy target for an endpoint.

Why: a ``TargetGroupBinding`` is done for Pulumi as soon as the API server accepts it; its CRD has no status beyond
``observedGeneration`` (elbv2.k8s.aws v1beta1, aws-load-balancer-controller helm/aws-load-balancer-controller/crds),
so no ``pulumi.com/waitFor`` can say the ALB reaches a pod. The LB controller registers the Service's pod IPs in the
target group and the ALB health-checks them (``loadBalancer.healthCheckPath``); only then does the front door serve.
This resource reads that with ELBv2 ``DescribeTargetHealth`` (botocore ``elbv2`` model: ``TargetHealthDescriptions``
[].``TargetHealth.State`` in initial, healthy, unhealthy, unused, draining, unavailable, unhealthy.draining) every
``pollSeconds`` until at least one target is ``healthy``, within ``timeoutSeconds`` (policies/readiness.yaml).

Lifecycle: create waits; a new target group or region replaces (waits again); anything else (timeout, poll, the
credential chain) updates without waiting; read returns the inputs; delete calls nothing (it owns nothing in AWS).
Clients, retries and the stack's credential chain come from ``components/dynamic_provider.py``.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping
from typing import Any

import pulumi
from botocore.exceptions import ClientError
from pulumi import dynamic

from .dynamic_provider import DENIED_CODES, DynamicProviderBase
from .dynamic_provider import error_code as _code
from .dynamic_provider import error_message as _message

RESOURCE_KIND = "hyperpod:TargetHealthWait"
HEALTHY = "healthy"
POLL_SECONDS = 15.0


class TargetHealthError(Exception):
    """One clear, actionable message for a failed wait."""


def target_states(response: Mapping[str, Any]) -> Counter[str]:
    """How many targets of a DescribeTargetHealth response are in each state."""
    return Counter(
        str((d.get("TargetHealth") or {}).get("State", "unknown")) for d in response.get("TargetHealthDescriptions", [])
    )


class TargetHealthWaitProvider(DynamicProviderBase):
    """Waits for a healthy target; ``client_factory``/``sleep``/``clock``/``log`` are for tests."""

    service = "elbv2"
    replace_keys = ("targetGroupArn", "region")
    update_keys = ("endpoint", "timeoutSeconds", "pollSeconds")

    def error(self, operation: str, params: Mapping[str, Any], err: ClientError) -> TargetHealthError:
        code, message = _code(err), _message(err)
        if code in DENIED_CODES:
            return TargetHealthError(
                "access denied: the credentials running `pulumi up` need IAM action "
                f"elasticloadbalancing:{operation} on {params.get('TargetGroupArn')}: {message}"
            )
        return TargetHealthError(f"{operation} on {params.get('TargetGroupArn')} failed ({code}): {message}")

    def wait(self, props: Mapping[str, Any]) -> dict[str, int]:
        region, arn = self._use(props), str(props["targetGroupArn"])
        timeout = float(props["timeoutSeconds"])
        poll = float(props.get("pollSeconds") or POLL_SECONDS)
        started = self._now()
        while True:
            states = target_states(self._call(region, "DescribeTargetHealth", TargetGroupArn=arn))
            if states[HEALTHY] > 0:
                self._info(f"{props.get('endpoint')}: {states[HEALTHY]} healthy target(s) behind the front door")
                return dict(sorted(states.items()))
            elapsed = self._now() - started
            shown = ", ".join(f"{s}: {n}" for s, n in sorted(states.items())) or "no target registered"
            if elapsed >= timeout:
                raise TargetHealthError(
                    f"endpoint {props.get('endpoint')}: no healthy target in {arn} after {elapsed:.0f}s (timeoutSeconds "
                    f"{timeout:g}, policies/readiness.yaml): {shown}. `aws elbv2 describe-target-health "
                    f"--target-group-arn {arn}` gives each target's Reason; `hpi verify` checks the rest"
                )
            self._info(f"{props.get('endpoint')}: waiting for a healthy target ({shown})")
            self._wait(poll)

    def create(self, props: dict[str, Any]) -> dynamic.CreateResult:
        return dynamic.CreateResult(str(props["targetGroupArn"]), {**props, "targetStates": self.wait(props)})

    def read(self, id_: str, props: dict[str, Any]) -> dynamic.ReadResult:
        return dynamic.ReadResult(id_, props)

    def diff(self, _id: str, olds: dict[str, Any], news: dict[str, Any]) -> dynamic.DiffResult:
        return self.diff_keys(olds, news)

    def update(self, _id: str, olds: dict[str, Any], news: dict[str, Any]) -> dynamic.UpdateResult:
        return dynamic.UpdateResult({**news, "targetStates": olds.get("targetStates")})

    def delete(self, _id: str, _props: dict[str, Any]) -> None:
        return None


class TargetHealthWait(dynamic.Resource):
    """The wait. Inputs: ``region``, ``targetGroupArn``, ``endpoint`` (its name, for messages), ``timeoutSeconds``,
    ``pollSeconds`` and the credential chain (:func:`components.dynamic_provider.credential_inputs`)."""

    targetStates: pulumi.Output[dict[str, int]]

    def __init__(
        self,
        name: str,
        props: Mapping[str, Any],
        opts: pulumi.ResourceOptions | None = None,
        provider: TargetHealthWaitProvider | None = None,
    ) -> None:
        inputs: dict[str, Any] = {**props, "resourceKind": RESOURCE_KIND, "targetStates": None}
        super().__init__(provider or TargetHealthWaitProvider(), name, inputs, opts)
