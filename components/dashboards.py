"""ObservabilityDashboards: a CloudWatch dashboard (one row per endpoint) and the front door's alarms, as code.

The dashboard body is a pure function of the stack (:func:`dashboard_body`) — the endpoints, the ALB and
target groups the front door created, the WebACL — so it is reviewed like any other input (``tools.cli.preview
--out`` writes every ``aws.cloudwatch.Dashboard`` body under ``dashboards/``).

Per endpoint row: ALB requests and 4xx/5xx of its target group, target response time (p50/p90/p99), healthy
and unhealthy targets (namespace ``AWS/ApplicationELB``, dimensions ``TargetGroup`` + ``LoadBalancer``; ELB docs
"CloudWatch metrics for your Application Load Balancer"), and the PromQL the AMP workspace answers for the same
endpoint (KV-cache hit rate, TTFT, inter-token latency, queue depth, GPU utilisation; see
:data:`PROMETHEUS_METRICS` for each name's source). CloudWatch cannot query AMP, so those are text widgets to
paste into Amazon Managed Grafana or ``awscurl``; the add-on's own Grafana dashboards show them too.

Alarms (``AWS/ApplicationELB`` and ``AWS/WAFV2``):

- ``<prefix>-alb-5xx-rate``: (ELB 5xx + target 5xx) / requests x 100 over 5 minutes, metric math.
- ``<prefix>-<endpoint>-4xx``: target 4xx per target group. The ALB publishes status *classes* only
  (``HTTPCode_Target_4XX_Count``), so this counts the operator's request-limit 429s
  (``worker.requestLimits.overflowStatusCode``, default 429) together with other 4xx; the exact 429 count is in
  the ALB access logs.
- ``<prefix>-<endpoint>-unhealthy``: ``UnHealthyHostCount`` > 0 for 3 minutes.
- ``<prefix>-waf-blocked``: ``BlockedRequests`` (``WebACL``, ``Rule=ALL``, ``Region``; AWS WAF docs "AWS WAF
  metrics and dimensions") over 5 minutes — rate limiting and managed-rule blocks together.

Optional SNS topic: encrypted with a customer managed KMS key whose policy lets CloudWatch use it — alarms
cannot publish to a topic encrypted with the AWS managed key ``alias/aws/sns`` (Amazon SNS developer guide,
"Configure KMS permissions for AWS services": its policy cannot grant CloudWatch).
"""

from __future__ import annotations

import functools
import json
from dataclasses import dataclass, field
from typing import Any

import pulumi
import pulumi_aws as aws

from .config.endpoints import EndpointConfig
from .config.observability import AlarmsConfig

ALB_NS = "AWS/ApplicationELB"
WAF_NS = "AWS/WAFV2"
ROW_HEIGHT = 6

# Metric name -> (what it shows, source). Label names in the PromQL below (namespace, pod) depend on the
# add-on's collector relabeling: UNCONFIRMED [promql-labels] until checked against a live workspace.
PROMETHEUS_METRICS: dict[str, tuple[str, str]] = {
    "model_invocations_total": ("invocations", "AWS docs sagemaker-hyperpod-model-deployment-observability"),
    "model_errors_total": ("invocation errors", "AWS docs sagemaker-hyperpod-model-deployment-observability"),
    "model_concurrent_requests": ("concurrent requests", "AWS docs sagemaker-hyperpod-model-deployment-observability"),
    "model_ttfb_milliseconds": ("time to first byte", "AWS docs sagemaker-hyperpod-model-deployment-observability"),
    "vllm:time_to_first_token_seconds": ("TTFT histogram", "docs.vllm.ai usage/metrics (Production Metrics)"),
    "vllm:inter_token_latency_seconds": ("TPOT / inter-token latency histogram", "vllm docs/design/metrics.md"),
    "vllm:num_requests_waiting": ("queue depth", "docs.vllm.ai usage/metrics"),
    "vllm:num_requests_running": ("running requests", "docs.vllm.ai usage/metrics"),
    "vllm:prefix_cache_hits_total": ("KV/prefix cache hits (tokens)", "vllm docs/design/metrics.md"),
    "vllm:prefix_cache_queries_total": ("KV/prefix cache queries (tokens)", "vllm docs/design/metrics.md"),
    "vllm:kv_cache_usage_perc": ("GPU KV-cache usage 0-1", "vllm docs/design/metrics.md"),
    "DCGM_FI_DEV_GPU_UTIL": ("GPU utilisation %", "NVIDIA DCGM exporter; add-on acceleratedComputeMetrics"),
}


def _promql(namespace: str, endpoint: str) -> list[tuple[str, str]]:
    sel = f'namespace="{namespace}",pod=~"{endpoint}.*"'
    return [
        (
            "KV-cache hit rate",
            f"sum(rate(vllm:prefix_cache_hits_total{{{sel}}}[5m])) / "
            f"sum(rate(vllm:prefix_cache_queries_total{{{sel}}}[5m]))",
        ),
        (
            "TTFT p90 (s)",
            f"histogram_quantile(0.9, sum by (le) (rate(vllm:time_to_first_token_seconds_bucket{{{sel}}}[5m])))",
        ),
        (
            "TPOT p90 (s)",
            f"histogram_quantile(0.9, sum by (le) (rate(vllm:inter_token_latency_seconds_bucket{{{sel}}}[5m])))",
        ),
        ("queue depth", f"sum(vllm:num_requests_waiting{{{sel}}})"),
        ("concurrent requests", f"sum(model_concurrent_requests{{{sel}}})"),
        ("GPU utilisation (%)", f"avg(DCGM_FI_DEV_GPU_UTIL{{{sel}}})"),
    ]


def lb_suffix_from_listener(listener_arn: str) -> str:
    """``...:listener/app/<name>/<lb-id>/<listener-id>`` -> ``app/<name>/<lb-id>`` (the LoadBalancer dimension)."""
    resource = listener_arn.split(":", 5)[-1]
    parts = resource.split("/")
    return "/".join(parts[1:4])


def tg_suffix(target_group_arn: str) -> str:
    """``...:targetgroup/<name>/<id>`` -> ``targetgroup/<name>/<id>`` (the TargetGroup dimension)."""
    return target_group_arn.split(":", 5)[-1]


def _text(x: int, y: int, w: int, h: int, markdown: str) -> dict[str, Any]:
    return {"type": "text", "x": x, "y": y, "width": w, "height": h, "properties": {"markdown": markdown}}


def _metric(x: int, y: int, title: str, region: str, metrics: list[list[Any]], *, stat: str = "Sum") -> dict[str, Any]:
    return {
        "type": "metric",
        "x": x,
        "y": y,
        "width": 6,
        "height": ROW_HEIGHT,
        "properties": {
            "title": title,
            "region": region,
            "view": "timeSeries",
            "stacked": False,
            "period": 60,
            "stat": stat,
            "metrics": metrics,
        },
    }


@dataclass(frozen=True)
class EndpointRow:
    name: str
    namespace: str
    target_group_suffix: str | None


def dashboard_body(
    *,
    name_prefix: str,
    region: str,
    rows: list[EndpointRow],
    lb_suffix: str | None,
    web_acl_name: str | None,
    rate_rule_metrics: tuple[str, ...] = (),
) -> dict[str, Any]:
    """The CloudWatch dashboard body: a header, one row per endpoint, then the WebACL row."""
    widgets: list[dict[str, Any]] = [
        _text(0, 0, 24, 2, f"# {name_prefix} inference\nOne row per endpoint; PromQL panels query the AMP workspace.")
    ]
    y = 2
    for row in rows:
        queries = "\n".join(f"- **{title}**: `{q}`" for title, q in _promql(row.namespace, row.name))
        widgets.append(_text(0, y, 6, ROW_HEIGHT, f"## {row.name}\nnamespace `{row.namespace}`\n\n{queries}"))
        if row.target_group_suffix is not None and lb_suffix is not None:
            dims = ["TargetGroup", row.target_group_suffix, "LoadBalancer", lb_suffix]
            widgets.append(
                _metric(
                    6,
                    y,
                    f"{row.name}: requests and errors",
                    region,
                    [
                        [ALB_NS, "RequestCount", *dims],
                        [ALB_NS, "HTTPCode_Target_4XX_Count", *dims],
                        [ALB_NS, "HTTPCode_Target_5XX_Count", *dims],
                    ],
                )
            )
            widgets.append(
                _metric(
                    12,
                    y,
                    f"{row.name}: target response time",
                    region,
                    [
                        [ALB_NS, "TargetResponseTime", *dims, {"stat": "p50"}],
                        [ALB_NS, "TargetResponseTime", *dims, {"stat": "p90"}],
                        [ALB_NS, "TargetResponseTime", *dims, {"stat": "p99"}],
                    ],
                    stat="p90",
                )
            )
            widgets.append(
                _metric(
                    18,
                    y,
                    f"{row.name}: targets",
                    region,
                    [[ALB_NS, "HealthyHostCount", *dims], [ALB_NS, "UnHealthyHostCount", *dims]],
                    stat="Maximum",
                )
            )
        else:
            widgets.append(_text(6, y, 18, ROW_HEIGHT, f"`{row.name}` is not routed through the front-door ALB."))
        y += ROW_HEIGHT
    if web_acl_name is not None:
        dims = ["WebACL", web_acl_name, "Rule", "ALL", "Region", region]
        widgets.append(
            _metric(
                0,
                y,
                "WebACL: allowed and blocked",
                region,
                [[WAF_NS, "AllowedRequests", *dims], [WAF_NS, "BlockedRequests", *dims]],
            )
        )
        widgets.append(
            _metric(
                6,
                y,
                "WebACL: rate limits (429)",
                region,
                [
                    [WAF_NS, "BlockedRequests", "WebACL", web_acl_name, "Rule", rule, "Region", region]
                    for rule in rate_rule_metrics
                ],
            )
        )
    return {"widgets": widgets}


def alarm_topic_key_policy(account_id: str, partition: str = "aws") -> dict[str, Any]:
    return {
        "Version": "2012-10-17",
        "Statement": [
            {
                "Sid": "AccountAdministers",
                "Effect": "Allow",
                "Principal": {"AWS": f"arn:{partition}:iam::{account_id}:root"},
                "Action": "kms:*",
                "Resource": "*",
            },
            {
                "Sid": "CloudWatchAlarmsPublish",
                "Effect": "Allow",
                "Principal": {"Service": "cloudwatch.amazonaws.com"},
                "Action": ["kms:Decrypt", "kms:GenerateDataKey*"],
                "Resource": "*",
                "Condition": {"StringEquals": {"aws:SourceAccount": account_id}},
            },
        ],
    }


def alarm_topic_policy(topic_arn: str, account_id: str) -> dict[str, Any]:
    return {
        "Version": "2012-10-17",
        "Statement": [
            {
                "Sid": "CloudWatchAlarmsPublish",
                "Effect": "Allow",
                "Principal": {"Service": "cloudwatch.amazonaws.com"},
                "Action": "sns:Publish",
                "Resource": topic_arn,
                "Condition": {"StringEquals": {"aws:SourceAccount": account_id}},
            }
        ],
    }


def _tg_dimensions(endpoint: str, v: list[Any]) -> dict[str, str]:
    return {"LoadBalancer": str(v[0]), "TargetGroup": v[1][endpoint]}


@dataclass(frozen=True)
class ObservabilityDashboardsArgs:
    name_prefix: str
    region: str
    endpoints: list[EndpointConfig]
    alarms: AlarmsConfig
    dashboard: bool = True
    https_listener_arn: pulumi.Input[str] | None = field(
        default=None, metadata={"doc": "The front door's HTTPS listener (its ARN names the ALB)."}
    )
    target_group_arns: dict[str, pulumi.Input[str]] = field(default_factory=dict)
    web_acl_name: str | None = None
    waf_rate_rule_metrics: tuple[str, ...] = ()
    protect: bool = field(default=False, metadata={"doc": "Protect the topic's KMS key (prod: keys are state)."})
    tags: dict[str, str] = field(default_factory=dict)


class ObservabilityDashboards(pulumi.ComponentResource):
    """The CloudWatch dashboard, the alarms and the optional SNS topic."""

    dashboard_name: str | None
    topic_arn: pulumi.Output[str] | None

    def __init__(
        self, name: str, args: ObservabilityDashboardsArgs, opts: pulumi.ResourceOptions | None = None
    ) -> None:
        super().__init__("hyperpod:observability:ObservabilityDashboards", name, None, opts)
        child = pulumi.ResourceOptions(parent=self)
        lb: pulumi.Output[str | None] = (
            pulumi.Output.from_input(args.https_listener_arn).apply(lb_suffix_from_listener)
            if args.https_listener_arn is not None
            else pulumi.Output.from_input(None)
        )
        names = [e.name for e in args.endpoints]
        tg_out = pulumi.Output.all(*[args.target_group_arns[n] for n in names if n in args.target_group_arns])
        routed = [n for n in names if n in args.target_group_arns]
        tgs: pulumi.Output[dict[str, str]] = tg_out.apply(
            lambda arns: {n: tg_suffix(str(a)) for n, a in zip(routed, arns, strict=True)}
        )

        self.dashboard_name = None
        if args.dashboard:
            self.dashboard_name = f"{args.name_prefix}-inference"

            def body(v: list[Any]) -> str:
                lb_suffix, suffixes = v[0], v[1]
                rows = [EndpointRow(e.name, e.namespace, suffixes.get(e.name)) for e in args.endpoints]
                doc = dashboard_body(
                    name_prefix=args.name_prefix,
                    region=args.region,
                    rows=rows,
                    lb_suffix=lb_suffix,
                    web_acl_name=args.web_acl_name,
                    rate_rule_metrics=args.waf_rate_rule_metrics,
                )
                return json.dumps(doc, sort_keys=True)

            aws.cloudwatch.Dashboard(
                f"{name}-dashboard",
                dashboard_name=self.dashboard_name,
                dashboard_body=pulumi.Output.all(lb, tgs).apply(body),
                opts=child,
            )

        self.topic_arn = None
        actions: list[pulumi.Input[str]] = []
        alarms = args.alarms
        if alarms.enabled and alarms.sns_topic:
            self.topic_arn = self._topic(name, args)
            actions = [self.topic_arn]
        elif alarms.enabled and alarms.sns_topic_arn is not None:
            actions = [alarms.sns_topic_arn]
        if alarms.enabled:
            self._alarms(name, args, lb=lb, tgs=tgs, routed=routed, actions=actions)
        self.register_outputs({"dashboardName": self.dashboard_name, "alarmTopicArn": self.topic_arn})

    def _topic(self, name: str, args: ObservabilityDashboardsArgs) -> pulumi.Output[str]:
        child = pulumi.ResourceOptions(parent=self)
        caller = aws.get_caller_identity_output(opts=pulumi.InvokeOutputOptions(parent=self))
        partition = aws.get_partition_output(opts=pulumi.InvokeOutputOptions(parent=self)).partition
        key = aws.kms.Key(
            f"{name}-alarm-topic-key",
            description=f"{args.name_prefix} alarm topic (CloudWatch may use it)",
            enable_key_rotation=True,
            deletion_window_in_days=30,
            policy=pulumi.Output.all(caller.account_id, partition).apply(
                lambda v: json.dumps(alarm_topic_key_policy(str(v[0]), str(v[1])))
            ),
            tags=args.tags,
            opts=pulumi.ResourceOptions(parent=self, protect=args.protect),
        )
        topic = aws.sns.Topic(
            f"{name}-alarm-topic",
            name=f"{args.name_prefix}-alarms",
            kms_master_key_id=key.arn,
            tags=args.tags,
            opts=child,
        )
        aws.sns.TopicPolicy(
            f"{name}-alarm-topic-policy",
            arn=topic.arn,
            policy=pulumi.Output.all(topic.arn, caller.account_id).apply(
                lambda v: json.dumps(alarm_topic_policy(str(v[0]), str(v[1])))
            ),
            opts=child,
        )
        return topic.arn

    def _alarms(
        self,
        name: str,
        args: ObservabilityDashboardsArgs,
        *,
        lb: pulumi.Output[str | None],
        tgs: pulumi.Output[dict[str, str]],
        routed: list[str],
        actions: list[pulumi.Input[str]],
    ) -> None:
        child = pulumi.ResourceOptions(parent=self)
        cfg = args.alarms
        common: dict[str, Any] = {
            "alarm_actions": actions,
            "ok_actions": actions,
            "treat_missing_data": "notBreaching",
            "tags": args.tags,
            "opts": child,
        }
        cw = aws.cloudwatch
        if args.https_listener_arn is not None:

            def q(qid: str, metric: str) -> cw.MetricAlarmMetricQueryArgs:
                return cw.MetricAlarmMetricQueryArgs(
                    id=qid,
                    return_data=False,
                    metric=cw.MetricAlarmMetricQueryMetricArgs(
                        namespace=ALB_NS,
                        metric_name=metric,
                        period=300,
                        stat="Sum",
                        dimensions=lb.apply(lambda s: {"LoadBalancer": str(s)}),
                    ),
                )

            cw.MetricAlarm(
                f"{name}-alb-5xx-rate",
                name=f"{args.name_prefix}-alb-5xx-rate",
                alarm_description="ALB and target 5xx as a percentage of requests (5 minutes)",
                comparison_operator="GreaterThanThreshold",
                threshold=cfg.alb_5xx_rate_percent,
                evaluation_periods=1,
                metric_queries=[
                    q("elb5xx", "HTTPCode_ELB_5XX_Count"),
                    q("target5xx", "HTTPCode_Target_5XX_Count"),
                    q("requests", "RequestCount"),
                    cw.MetricAlarmMetricQueryArgs(
                        id="rate",
                        label="5xx %",
                        return_data=True,
                        expression="IF(requests > 0, 100 * (FILL(elb5xx, 0) + FILL(target5xx, 0)) / requests, 0)",
                    ),
                ],
                **common,
            )
            for endpoint in routed:
                dims = pulumi.Output.all(lb, tgs).apply(functools.partial(_tg_dimensions, endpoint))
                cw.MetricAlarm(
                    f"{name}-{endpoint}-4xx",
                    name=f"{args.name_prefix}-{endpoint}-4xx",
                    alarm_description=f"{endpoint}: target 4xx (incl. request-limit 429s) per 5 minutes",
                    namespace=ALB_NS,
                    metric_name="HTTPCode_Target_4XX_Count",
                    dimensions=dims,
                    statistic="Sum",
                    period=300,
                    evaluation_periods=1,
                    comparison_operator="GreaterThanThreshold",
                    threshold=cfg.target_429_per_5min,
                    **common,
                )
                cw.MetricAlarm(
                    f"{name}-{endpoint}-unhealthy",
                    name=f"{args.name_prefix}-{endpoint}-unhealthy",
                    alarm_description=f"{endpoint}: unhealthy targets for 3 minutes",
                    namespace=ALB_NS,
                    metric_name="UnHealthyHostCount",
                    dimensions=dims,
                    statistic="Maximum",
                    period=60,
                    evaluation_periods=3,
                    comparison_operator="GreaterThanThreshold",
                    threshold=0,
                    **common,
                )
        if args.web_acl_name is not None:
            cw.MetricAlarm(
                f"{name}-waf-blocked",
                name=f"{args.name_prefix}-waf-blocked",
                alarm_description="Requests the WebACL blocked (rate limits and managed rules) per 5 minutes",
                namespace=WAF_NS,
                metric_name="BlockedRequests",
                dimensions={"WebACL": args.web_acl_name, "Rule": "ALL", "Region": args.region},
                statistic="Sum",
                period=300,
                evaluation_periods=1,
                comparison_operator="GreaterThanThreshold",
                threshold=cfg.waf_blocked_per_5min,
                **common,
            )
