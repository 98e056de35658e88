"""Typed specs of the operator's custom resources, field for field as the CRDs define them (camelCase).

``InferenceEndpointConfigSpec`` and ``JumpStartModelSpec`` follow the v1 ``openAPIV3Schema`` of the real CRDs
(operator v3.2, aws/sagemaker-hyperpod-cli chart 2.2.2; see ``../shared/crds``), plus the fields AWS documents
for later operators that no public CRD carries yet (:data:`LATER_FIELDS`). ``InferenceGatewayConfigSpec`` is
typed from the AWS Inference Gateway documentation (no public CRD exists; operator-facts §7).

Why typed: a misspelt key (``imagee``) or an out-of-range value must fail at ``pulumi preview`` with its stack
path, not be dropped by the API server's pruning or rejected by the operator later. Every model forbids
unknown keys and accepts keys only by their CRD names. Fields are optional unless the CRD requires them
without a default, and carry no defaults of their own, so ``model_dump(by_alias=True, exclude_unset=True)``
renders exactly what the user wrote (the operator applies the CRD defaults).

Embedded Kubernetes core types (resources, nodeAffinity, probes, env vars, volumes, init containers) stay
``dict[str, Any]`` (:data:`OPAQUE_PATHS`); the schema-validation tests check them against the CRD.
``tests/test_crd_models.py`` keeps these classes in sync with the CRD property by property.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator

LATER_FIELDS: dict[str, str] = {
    "loadBalancer.idleTimeoutSeconds": "3.3",
    "modelCacheConfig": "3.3",
    "inferenceGateway": "3.6",
}
"""Spec paths documented for operator releases newer than the public CRD, with the operator that added them
(../shared/crds/history/README.md, operator-facts §6-7). The compatibility table gates their use."""

OPAQUE_PATHS: frozenset[str] = frozenset(
    {
        "nodeAffinity",
        "kubernetes.initContainers",
        "kubernetes.volumes",
        "worker.environmentVariables",
        "worker.resources",
        "worker.probes.livenessProbe",
        "worker.probes.readinessProbe",
        "worker.probes.startupProbe",
        "pdSpec.prefillSpec.resources",
        "pdSpec.decodingSpec.resources",
    }
)
"""Spec paths holding Kubernetes core types, kept as free mappings (validated against the CRD in tests)."""


class CrdModel(BaseModel):
    """Base of every CRD spec model: keys by CRD name only, unknown keys forbidden, immutable."""

    model_config = ConfigDict(
        extra="forbid",
        frozen=True,
        populate_by_name=False,
        protected_namespaces=(),
        regex_engine="python-re",
    )

    def dump(self) -> dict[str, Any]:
        """What the user wrote, camelCase (unset fields left out; the operator applies CRD defaults)."""
        return self.model_dump(by_alias=True, exclude_unset=True)


# --- InferenceEndpointConfig / JumpStartModel v1 (from the CRDs) -----------------------------------------


class MetricDimension(CrdModel):
    """`autoScalingSpec.cloudWatchTrigger.dimensions[]`"""

    name: str = Field(alias="name", description="CloudWatch Metric dimension name")
    value: str = Field(alias="value", description="CloudWatch Metric dimension value")


class CloudWatchTrigger(CrdModel):
    """`autoScalingSpec.cloudWatchTrigger` — CloudWatch metric trigger to use for autoscaling"""

    activation_target_value: int | float | None = Field(
        default=None,
        alias="activationTargetValue",
        description="Activation Value for CloudWatch metric to scale from 0 to 1",
    )
    dimensions: list[MetricDimension] | None = Field(
        default=None, alias="dimensions", description="Dimensions for Cloudwatch metrics"
    )
    metric_collection_period: int | None = Field(
        default=None, alias="metricCollectionPeriod", description="Defines the Period for CloudWatch query"
    )
    metric_collection_start_time: int | None = Field(
        default=None, alias="metricCollectionStartTime", description="Defines the StartTime for CloudWatch query"
    )
    metric_name: str | None = Field(
        default=None, alias="metricName", description="Metric name to query for Cloudwatch trigger"
    )
    metric_stat: str | None = Field(
        default=None, alias="metricStat", description="Statistics metric to be used by Trigger"
    )
    metric_type: Literal["Value", "Average"] | None = Field(
        default=None, alias="metricType", description="The type of metric to be used by HPA"
    )
    min_value: int | float | None = Field(
        default=None,
        alias="minValue",
        description="Minimum metric value used in case of empty response from CloudWatch",
    )
    name: str | None = Field(default=None, alias="name", description="Name for the CloudWatch trigger")
    namespace: str | None = Field(default=None, alias="namespace", description="AWS CloudWatch namespace for metric")
    target_value: int | float | None = Field(
        default=None, alias="targetValue", description="TargetValue for CloudWatch metric"
    )
    use_cached_metrics: bool | None = Field(
        default=None, alias="useCachedMetrics", description="Enable caching of metric values during polling interval"
    )


class PrometheusTrigger(CrdModel):
    """`autoScalingSpec.prometheusTrigger` — Prometheus metric trigger to use for autoscaling"""

    activation_target_value: int | float | None = Field(
        default=None,
        alias="activationTargetValue",
        description="Activation Value for Prometheus metric to scale from 0 to 1",
    )
    custom_headers: str | None = Field(
        default=None,
        alias="customHeaders",
        description="Custom headers to include while querying the prometheus endpoint",
    )
    metric_type: Literal["Value", "Average"] | None = Field(
        default=None, alias="metricType", description="The type of metric to be used by HPA"
    )
    name: str | None = Field(default=None, alias="name", description="Name for the Prometheus trigger")
    namespace: str | None = Field(default=None, alias="namespace", description="Namespace for namespaced queries")
    query: str | None = Field(default=None, alias="query", description="PromQLQuery for the metric")
    server_address: str | None = Field(
        default=None,
        alias="serverAddress",
        pattern="^https:\\/\\/aps-workspaces\\.[a-zA-Z0-9-]+(?:\\.[a-zA-Z0-9-]+)*\\.amazonaws\\.com\\/workspaces\\/ws-[a-zA-Z0-9-]+$|^$",
        description="Server address for AMP workspace",
    )
    target_value: int | float | None = Field(
        default=None, alias="targetValue", description="Target metric value for scaling"
    )
    use_cached_metrics: bool | None = Field(
        default=None, alias="useCachedMetrics", description="Enable caching of metric values during polling interval"
    )


class AutoScalingSpec(CrdModel):
    """`autoScalingSpec`"""

    cloud_watch_trigger: CloudWatchTrigger | None = Field(
        default=None, alias="cloudWatchTrigger", description="CloudWatch metric trigger to use for autoscaling"
    )
    cloud_watch_trigger_list: list[CloudWatchTrigger] | None = Field(
        default=None, alias="cloudWatchTriggerList", max_length=100
    )
    cooldown_period: int | None = Field(
        default=None,
        alias="cooldownPeriod",
        ge=0,
        description="The period to wait after the last trigger reported active before scaling the resource back to 0",
    )
    initial_cooldown_period: int | None = Field(
        default=None,
        alias="initialCooldownPeriod",
        ge=0,
        description="The delay before the cooldownPeriod starts after the initial creation of the ScaledObject",
    )
    max_replica_count: int | None = Field(
        default=None, alias="maxReplicaCount", ge=0, description="The maximum number of model pods to scale to"
    )
    min_replica_count: int | None = Field(
        default=None, alias="minReplicaCount", ge=0, description="The minimum number of model pods to scale down to"
    )
    polling_interval: int | None = Field(
        default=None, alias="pollingInterval", ge=0, description="This is the interval to check each trigger on"
    )
    prometheus_trigger: PrometheusTrigger | None = Field(
        default=None, alias="prometheusTrigger", description="Prometheus metric trigger to use for autoscaling"
    )
    prometheus_trigger_list: list[PrometheusTrigger] | None = Field(
        default=None, alias="prometheusTriggerList", max_length=100
    )
    scale_down_stabilization_time: int | None = Field(
        default=None,
        alias="scaleDownStabilizationTime",
        ge=0,
        description="The time window to stabilize for HPA before scaling down",
    )
    scale_up_stabilization_time: int | None = Field(
        default=None,
        alias="scaleUpStabilizationTime",
        ge=0,
        description="The time window to stabilize for HPA before scaling up",
    )


class DataCaptureLoadBalancer(CrdModel):
    """`dataCapture.loadBalancer` — Configuration for LoadBalancer level data capture (Tier 2)"""

    enabled: bool = Field(alias="enabled", description="Enable or disable load balancer access logs")


class BufferConfig(CrdModel):
    """`dataCapture.modelPod.bufferConfig` — Configuration for buffering and flushing captured data"""

    batch_size: int | None = Field(
        default=None, alias="batchSize", ge=1, le=1000, description="Number of records to batch before writing to S3"
    )
    flush_interval_seconds: int | None = Field(
        default=None, alias="flushIntervalSeconds", ge=10, le=300, description="Flush interval in seconds"
    )


class CaptureContentTypeHeader(CrdModel):
    """`dataCapture.modelPod.captureContentTypeHeader` — Configuration for how to treat different content type headers during capture"""

    csv_content_types: list[str] | None = Field(
        default=None,
        alias="csvContentTypes",
        max_length=10,
        min_length=1,
        description="List of content type headers to treat as CSV Each item must be 1-256 characters and match pattern:...",
    )
    json_content_types: list[str] | None = Field(
        default=None,
        alias="jsonContentTypes",
        max_length=10,
        min_length=1,
        description="List of content type headers to treat as JSON Each item must be 1-256 characters and match pattern:...",
    )


class CaptureOption(CrdModel):
    """`dataCapture.modelPod.captureOptions[]` — CaptureOption defines what data to capture (input, output, or both)."""

    capture_mode: Literal["Input", "Output"] = Field(alias="captureMode", description="Capture mode: Input or Output")


class PayloadConfig(CrdModel):
    """`dataCapture.modelPod.payloadConfig` — Configuration for payload size limits"""

    max_payload_size_kb: int | None = Field(
        default=None, alias="maxPayloadSizeKB", ge=0, le=10240, description="Maximum payload size in KB to capture"
    )


class DataCaptureSageMakerEndpoint(CrdModel):
    """`dataCapture.sagemakerEndpoint` — Configuration for SageMaker Endpoint level data capture (Tier 1)"""

    capture_content_type_header: CaptureContentTypeHeader | None = Field(
        default=None,
        alias="captureContentTypeHeader",
        description="Configuration for how to treat different content type headers during capture",
    )
    capture_options: list[CaptureOption] | None = Field(
        default=None,
        alias="captureOptions",
        max_length=32,
        min_length=1,
        description="Capture options (Input, Output, or both)",
    )
    enabled: bool = Field(alias="enabled", description="Enable or disable SageMaker endpoint data capture")
    initial_sampling_percentage: int | None = Field(
        default=None,
        alias="initialSamplingPercentage",
        ge=0,
        le=100,
        description="Percentage of requests to capture (0-100)",
    )
    kms_key_id: str | None = Field(
        default=None,
        alias="kmsKeyId",
        max_length=2048,
        pattern="^[a-zA-Z0-9:/_-]*$",
        description="Optional KMS key ID, ARN, alias name, or alias ARN for encrypting captured data",
    )


class DataCaptureModelPod(DataCaptureSageMakerEndpoint):
    """`dataCapture.modelPod` — Configuration for Model Pod level data capture (Tier 3)

    The CRD repeats the SageMaker-endpoint tier's fields here and adds buffering and payload limits.
    """

    buffer_config: BufferConfig | None = Field(
        default=None, alias="bufferConfig", description="Configuration for buffering and flushing captured data"
    )
    enabled: bool = Field(alias="enabled", description="Enable or disable model pod data capture")
    payload_config: PayloadConfig | None = Field(
        default=None, alias="payloadConfig", description="Configuration for payload size limits"
    )


class DataCapture(CrdModel):
    """`dataCapture` — Configuration for data capture across multiple tiers (SageMaker, LoadBalancer, Model Pod)"""

    load_balancer: DataCaptureLoadBalancer | None = Field(
        default=None, alias="loadBalancer", description="Configuration for LoadBalancer level data capture (Tier 2)"
    )
    model_pod: DataCaptureModelPod | None = Field(
        default=None, alias="modelPod", description="Configuration for Model Pod level data capture (Tier 3)"
    )
    s3_uri: str | None = Field(
        default=None,
        alias="s3Uri",
        max_length=512,
        pattern="^s3://([^/]+)(/[^,=]*)?$",
        description="Common S3 URI for all data capture tiers",
    )
    sagemaker_endpoint: DataCaptureSageMakerEndpoint | None = Field(
        default=None,
        alias="sagemakerEndpoint",
        description="Configuration for SageMaker Endpoint level data capture (Tier 1)",
    )


class DnsConfig(CrdModel):
    """`dnsConfig` — DNS automation configuration for Route53. Requires tlsConfig.customCertificateConfig to be"""

    hosted_zone_id: str = Field(
        alias="hostedZoneId",
        pattern="^Z[A-Z0-9]+$",
        description="Route53 Hosted Zone ID where the DNS record will be created",
    )


class IntelligentRoutingSpec(CrdModel):
    """`intelligentRoutingSpec` — Configuration for intelligent routing"""

    auto_scaling_spec: AutoScalingSpec | None = Field(default=None, alias="autoScalingSpec")
    enabled: bool | None = Field(
        default=None, alias="enabled", description="Once set, the enabled field cannot be modified"
    )
    routing_strategy: Literal["prefixaware", "kvaware", "session", "roundrobin"] | None = Field(
        default=None, alias="routingStrategy"
    )


class Kubernetes(CrdModel):
    """`kubernetes` — User-provided customizations for the inference pod."""

    init_containers: list[dict[str, Any]] | None = Field(
        default=None, alias="initContainers", description="Init containers to run before the inference server starts"
    )
    scheduler_name: str | None = Field(
        default=None,
        alias="schedulerName",
        max_length=253,
        pattern="^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$",
        description="Name of the scheduler to use for pod scheduling",
    )
    service_account_name: str | None = Field(
        default=None,
        alias="serviceAccountName",
        max_length=253,
        pattern="^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$",
        description="Name of the Kubernetes ServiceAccount to use for the inference pod",
    )
    volumes: list[dict[str, Any]] | None = Field(
        default=None, alias="volumes", description="Additional volumes to add to the pod spec"
    )


class L2CacheSpec(CrdModel):
    """`kvCacheSpec.l2CacheSpec` — Configuration for providing L2 Cache offloading"""

    l2_cache_backend: str | None = Field(
        default=None, alias="l2CacheBackend", pattern="(?i)redis|tieredstorage", description="L2 cache backend type"
    )
    l2_cache_local_url: str | None = Field(
        default=None, alias="l2CacheLocalUrl", description="Provide the L2 cache URL to local storage"
    )


class KvCacheSpec(CrdModel):
    """`kvCacheSpec` — Configuration for KV Cache specification"""

    cache_config_file: str | None = Field(
        default=None, alias="cacheConfigFile", description="KVCache configuration file path"
    )
    enable_l1_cache: bool | None = Field(default=None, alias="enableL1Cache", description="Enable CPU offloading")
    enable_l2_cache: bool | None = Field(default=None, alias="enableL2Cache")
    l2_cache_spec: L2CacheSpec | None = Field(
        default=None, alias="l2CacheSpec", description="Configuration for providing L2 Cache offloading"
    )


class LoadBalancer(CrdModel):
    """`loadBalancer` — Configuration for Application Load Balancer"""

    health_check_path: str | None = Field(
        default=None, alias="healthCheckPath", pattern="^/.*", description="Health check path for the ALB target group"
    )
    routing_algorithm: Literal["least_outstanding_requests", "round_robin"] | None = Field(
        default=None,
        alias="routingAlgorithm",
        description="Routing algorithm for the ALB target group (least_oustanding_requests or round_robin)",
    )
    idle_timeout_seconds: int | None = Field(default=None, alias="idleTimeoutSeconds", ge=1, le=4000)


class ModelMetrics(CrdModel):
    """`metrics.modelMetrics` — Configuration for model container metrics scraping"""

    path: str | None = Field(
        default=None,
        alias="path",
        pattern="^/[a-zA-Z0-9\\-_.\\/]*$",
        description="Path where the model exposes metrics",
    )
    port: int | None = Field(
        default=None, alias="port", ge=1024, le=65535, description="Port where the model exposes metrics"
    )


class Metrics(CrdModel):
    """`metrics` — Configuration for metrics collection and exposure"""

    enabled: bool | None = Field(
        default=None, alias="enabled", description="Enable metrics collection for this model deployment"
    )
    metrics_scrape_interval_seconds: int | None = Field(
        default=None,
        alias="metricsScrapeIntervalSeconds",
        ge=5,
        le=300,
        description="Scrape interval in seconds for metrics collection from sidecar and model container",
    )
    model_metrics: ModelMetrics | None = Field(
        default=None, alias="modelMetrics", description="Configuration for model container metrics scraping"
    )


class FsxStorage(CrdModel):
    """`modelSourceConfig.fsxStorage`"""

    dns_name: str | None = Field(default=None, alias="dnsName", description="FSX File System DNS Name")
    file_system_id: str = Field(alias="fileSystemId", description="FSX File System ID")
    mount_name: str | None = Field(default=None, alias="mountName", description="FSX File System Mount Name")


class TokenSecretRef(CrdModel):
    """`modelSourceConfig.huggingFaceModel.tokenSecretRef` — Reference to a Kubernetes Secret containing the HuggingFace API token."""

    key: str = Field(alias="key", description="The key of the secret to select from")
    name: str | None = Field(default=None, alias="name", description="Name of the referent")
    optional: bool | None = Field(
        default=None, alias="optional", description="Specify whether the Secret or its key must be defined"
    )


class HuggingFaceModel(CrdModel):
    """`modelSourceConfig.huggingFaceModel` — HuggingFace model configuration. Required when modelSourceType is 'huggingface'."""

    commit_sha: str | None = Field(
        default=None, alias="commitSHA", pattern="^[0-9a-f]{40}$", description="Git commit SHA for the model revision"
    )
    model_id: str = Field(
        alias="modelId",
        pattern="^[a-zA-Z0-9_.-]+/[a-zA-Z0-9_.-]+$",
        description="HuggingFace Hub model identifier in org/model format (e.g",
    )
    token_secret_ref: TokenSecretRef | None = Field(
        default=None,
        alias="tokenSecretRef",
        description="Reference to a Kubernetes Secret containing the HuggingFace API token",
    )


class S3Storage(CrdModel):
    """`modelSourceConfig.s3Storage`"""

    bucket_name: str = Field(alias="bucketName", description="S3 bucket location")
    region: str = Field(alias="region", description="S3 bucket region")


class ModelSourceConfig(CrdModel):
    """`modelSourceConfig`"""

    fsx_storage: FsxStorage | None = Field(default=None, alias="fsxStorage")
    hugging_face_model: HuggingFaceModel | None = Field(
        default=None, alias="huggingFaceModel", description="HuggingFace model configuration"
    )
    model_location: str | None = Field(
        default=None, alias="modelLocation", description="Specific location where the model data exists"
    )
    model_source_type: Literal["fsx", "s3", "huggingface", "kubernetesVolume"] = Field(alias="modelSourceType")
    prefetch_enabled: bool | None = Field(
        default=None,
        alias="prefetchEnabled",
        description="In case the model seems to fit within the instance's memory (VRAM), this option can be used to pre-fetch...",
    )
    s3_storage: S3Storage | None = Field(default=None, alias="s3Storage")


class PdAutoScalingSpec(CrdModel):
    """`pdSpec.autoScalingSpec` — Autoscaling configuration for prefill and decode roles independently."""

    decoding_auto_scaling: AutoScalingSpec | None = Field(
        default=None, alias="decodingAutoScaling", description="Autoscaling configuration for decode pods"
    )
    prefill_auto_scaling: AutoScalingSpec | None = Field(
        default=None, alias="prefillAutoScaling", description="Autoscaling configuration for prefill pods"
    )


class PdRoleSpec(CrdModel):
    """`pdSpec.decodingSpec` — Configuration for decode pods."""

    args: list[str] | None = Field(
        default=None,
        alias="args",
        description="Additional vLLM args for this role (e.g., --tensor-parallel-size, --gpu-memory-utilization, --max-num-seqs)",
    )
    node_selector: dict[str, str] | None = Field(
        default=None,
        alias="nodeSelector",
        description="Node selector for scheduling pods of this role onto specific nodes",
    )
    replicas: int | None = Field(default=None, alias="replicas", ge=1, description="Number of replicas for this role")
    resources: dict[str, Any] | None = Field(
        default=None, alias="resources", description="Resource requests and limits for pods of this role"
    )


class TopologySpec(CrdModel):
    """`pdSpec.topologySpec` — Topology constraints for prefill and decode pod scheduling."""

    availability_zone: str | None = Field(
        default=None, alias="availabilityZone", description="Force pods into a specific availability zone"
    )
    placement_group: str | None = Field(
        default=None,
        alias="placementGroup",
        description="Placement group name for lowest network latency between prefill and decode pods",
    )
    same_az: bool | None = Field(
        default=None, alias="sameAZ", description="Enforce same availability zone placement for prefill and decode pods"
    )


class PdSpec(CrdModel):
    """`pdSpec` — Configuration for disaggregated prefill and decode (DPD)."""

    auto_scaling_spec: PdAutoScalingSpec | None = Field(
        default=None,
        alias="autoScalingSpec",
        description="Autoscaling configuration for prefill and decode roles independently",
    )
    decoding_spec: PdRoleSpec = Field(alias="decodingSpec", description="Configuration for decode pods")
    prefill_spec: PdRoleSpec = Field(alias="prefillSpec", description="Configuration for prefill pods")
    routing_threshold: int | None = Field(
        default=None, alias="routingThreshold", ge=0, description="Token count threshold for conditional routing"
    )
    topology_spec: TopologySpec | None = Field(
        default=None, alias="topologySpec", description="Topology constraints for prefill and decode pod scheduling"
    )


class Tag(CrdModel):
    """`tags[]`"""

    name: str = Field(alias="name")
    value: str = Field(alias="value")


class CustomCertificateConfig(CrdModel):
    """`tlsConfig.customCertificateConfig` — Customer-provided ACM certificate configuration (if not provided, operator auto-generates"""

    acm_arn: str = Field(
        alias="acmArn",
        pattern="^arn:aws:acm:[a-z0-9-]+:[0-9]{12}:certificate/[a-fA-F0-9-]+$",
        description="ACM certificate ARN",
    )
    domain_name: str = Field(
        alias="domainName",
        max_length=253,
        pattern="^[a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?(\\.[a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?)*$",
        description="Domain name to use from the certificate (must be a specific domain, not a wildcard)",
    )


class TlsConfig(CrdModel):
    """`tlsConfig` — Configurations for TLS"""

    custom_certificate_config: CustomCertificateConfig | None = Field(
        default=None,
        alias="customCertificateConfig",
        description="Customer-provided ACM certificate configuration (if not provided, operator auto-generates self-signed...",
    )
    tls_certificate_output_s3_uri: str | None = Field(
        default=None,
        alias="tlsCertificateOutputS3Uri",
        pattern="^s3://([^/]+)/?(.*)$",
        description="S3 URI for auto-generated certificate storage",
    )


class ModelInvocationPort(CrdModel):
    """`worker.modelInvocationPort` — Defines the port at which the model server will listen to the invocation requests."""

    container_port: int = Field(
        alias="containerPort", ge=1, le=65535, description="Port on which the model server will be listening"
    )
    name: str | None = Field(
        default=None,
        alias="name",
        pattern="^http$|^grpc$",
        description="This is name for the port within the deployed container where the model will listen",
    )


class ModelVolumeMount(CrdModel):
    """`worker.modelVolumeMount` — Defines the volume where model will be loaded"""

    mount_path: str | None = Field(
        default=None,
        alias="mountPath",
        description="This is the path within the container where the model data will be available for the inference server to...",
    )
    name: str = Field(alias="name", description="Name of the model volume mount")


class Probes(CrdModel):
    """`worker.probes` — Configuration for container probes (liveness, readiness, startup)"""

    liveness_probe: dict[str, Any] | None = Field(
        default=None, alias="livenessProbe", description="Liveness probe configuration"
    )
    readiness_probe: dict[str, Any] | None = Field(
        default=None, alias="readinessProbe", description="Readiness probe configuration"
    )
    startup_probe: dict[str, Any] | None = Field(
        default=None, alias="startupProbe", description="Startup probe configuration"
    )


class RequestLimits(CrdModel):
    """`worker.requestLimits` — Configuration for request limiting on the nginx sidecar proxy"""

    max_concurrent_requests: int | None = Field(
        default=None,
        alias="maxConcurrentRequests",
        ge=1,
        description="Maximum number of concurrent requests the nginx sidecar proxy will accept per pod",
    )
    max_queue_size: int | None = Field(
        default=None,
        alias="maxQueueSize",
        ge=0,
        description="Maximum number of requests to queue when the concurrent request limit is reached",
    )
    overflow_status_code: int | None = Field(
        default=None,
        alias="overflowStatusCode",
        ge=400,
        le=599,
        description="HTTP status code returned when request limits are exceeded",
    )


class Worker(CrdModel):
    """`worker` — Details of the worker"""

    args: list[str] | None = Field(default=None, alias="args", description="Defines the Arguments to the entrypoint")
    command: list[str] | None = Field(
        default=None, alias="command", description="Defines the Command which is Entrypoint array"
    )
    environment_variables: list[dict[str, Any]] | None = Field(
        default=None, alias="environmentVariables", description="List of environment variables to set in the container"
    )
    image: str = Field(alias="image", description="The name of the inference server image to be used")
    model_invocation_port: ModelInvocationPort = Field(
        alias="modelInvocationPort",
        description="Defines the port at which the model server will listen to the invocation requests",
    )
    model_volume_mount: ModelVolumeMount = Field(
        alias="modelVolumeMount", description="Defines the volume where model will be loaded"
    )
    probes: Probes | None = Field(
        default=None, alias="probes", description="Configuration for container probes (liveness, readiness, startup)"
    )
    request_limits: RequestLimits | None = Field(
        default=None, alias="requestLimits", description="Configuration for request limiting on the nginx sidecar proxy"
    )
    resources: dict[str, Any] = Field(
        alias="resources",
        description="Defines the Resources in terms of CPU, GPU, Memory needed for the model to be deployed",
    )
    working_dir: str | None = Field(
        default=None, alias="workingDir", description="Defines the working directory of container"
    )


class ImageCache(CrdModel):
    """`modelCacheConfig.imageCache`"""

    enabled: bool = Field(alias="enabled")


class WeightsCache(CrdModel):
    """`modelCacheConfig.weightsCache`"""

    enabled: bool | None = Field(default=None, alias="enabled")
    host_path: str | None = Field(default=None, alias="hostPath", max_length=255, min_length=1)


class ModelCacheConfig(CrdModel):
    """`modelCacheConfig`"""

    image_cache: ImageCache | None = Field(default=None, alias="imageCache")
    weights_cache: WeightsCache | None = Field(default=None, alias="weightsCache")


class InferenceGateway(CrdModel):
    """`inferenceGateway`"""

    enabled: bool | None = Field(default=None, alias="enabled")
    name: str | None = Field(default=None, alias="name")


class InferenceEndpointConfigSpec(CrdModel):
    """`spec` — InferenceEndpointConfigSpec defines the desired state of InferenceEndpointConfig."""

    initial_replica_count: int | None = Field(
        default=None,
        ge=0,
        alias="InitialReplicaCount",
        description="Deprecated: This field has no effect and will be removed in a future release",
    )
    auto_scaling_spec: AutoScalingSpec | None = Field(default=None, alias="autoScalingSpec")
    data_capture: DataCapture | None = Field(
        default=None,
        alias="dataCapture",
        description="Configuration for data capture across multiple tiers (SageMaker, LoadBalancer, Model Pod)",
    )
    dns_config: DnsConfig | None = Field(
        default=None, alias="dnsConfig", description="DNS automation configuration for Route53"
    )
    endpoint_name: str | None = Field(
        default=None,
        alias="endpointName",
        max_length=63,
        pattern="^$|^[a-zA-Z0-9](-*[a-zA-Z0-9]){0,62}$",
        description="Name used for Sagemaker Endpoint Name of sagemaker endpoint",
    )
    instance_type: str | None = Field(
        default=None,
        alias="instanceType",
        pattern="^ml\\..*",
        description="Single instance type to deploy the model on",
    )
    instance_types: list[str] | None = Field(
        default=None,
        alias="instanceTypes",
        description="List of instance types to deploy the model on, in order of preference",
    )
    intelligent_routing_spec: IntelligentRoutingSpec | None = Field(
        default=None,
        alias="intelligentRoutingSpec",
        description="Configuration for intelligent routing This feature is currently not supported for existing deployments",
    )
    invocation_endpoint: str | None = Field(
        default=None, alias="invocationEndpoint", description="The invocation endpoint of the model server"
    )
    kubernetes: Kubernetes | None = Field(
        default=None, alias="kubernetes", description="User-provided customizations for the inference pod"
    )
    kv_cache_spec: KvCacheSpec | None = Field(
        default=None,
        alias="kvCacheSpec",
        description="Configuration for KV Cache specification By default L1CacheOffloading will be enabled",
    )
    load_balancer: LoadBalancer | None = Field(
        default=None, alias="loadBalancer", description="Configuration for Application Load Balancer"
    )
    max_deploy_time_in_seconds: int | None = Field(
        default=None,
        alias="maxDeployTimeInSeconds",
        description="Maximum allowed time in seconds for the deployment to complete before timing out",
    )
    metrics: Metrics | None = Field(
        default=None, alias="metrics", description="Configuration for metrics collection and exposure"
    )
    model_name: str = Field(
        alias="modelName",
        max_length=63,
        pattern="^[a-zA-Z0-9](-*[a-zA-Z0-9]){0,62}",
        description="Name of model that will be created on Sagemaker",
    )
    model_source_config: ModelSourceConfig = Field(alias="modelSourceConfig")
    model_version: str | None = Field(
        default=None, alias="modelVersion", description="Version of the model used in creating sagemaker endpoint"
    )
    node_affinity: dict[str, Any] | None = Field(
        default=None, alias="nodeAffinity", description="Custom node affinity configuration for advanced scheduling"
    )
    pd_spec: PdSpec | None = Field(
        default=None, alias="pdSpec", description="Configuration for disaggregated prefill and decode (DPD)"
    )
    # The CRD declares no minimum; a negative count is never valid (Kubernetes rejects negative replicas:
    # apps/v1 validation "must be greater than or equal to 0", k8s.io/kubernetes pkg/apis/apps/validation).
    replicas: int | None = Field(
        default=None, alias="replicas", ge=0, description="The desired number of inference server replicas"
    )
    tags: list[Tag] | None = Field(
        default=None, alias="tags", description="Mentions the tags to be added to the Sagemaker Endpoint"
    )
    tls_config: TlsConfig | None = Field(default=None, alias="tlsConfig", description="Configurations for TLS")
    worker: Worker = Field(alias="worker", description="Details of the worker")
    model_cache_config: ModelCacheConfig | None = Field(default=None, alias="modelCacheConfig")
    inference_gateway: InferenceGateway | None = Field(default=None, alias="inferenceGateway")


class EnvironmentVariable(CrdModel):
    """`environmentVariables[]`"""

    name: str = Field(alias="name")
    value: str = Field(alias="value")


class AdditionalConfig(CrdModel):
    """`model.additionalConfigs[]`"""

    name: str = Field(alias="name")
    value: str = Field(alias="value")


class JumpStartModelRef(CrdModel):
    """`model`"""

    accept_eula: bool | None = Field(
        default=None,
        alias="acceptEula",
        description="For models that require a Model Access Config, specify True or False to indicate whether model terms of...",
    )
    additional_configs: list[AdditionalConfig] | None = Field(default=None, alias="additionalConfigs", max_length=10)
    gated_model_download_role: str | None = Field(
        default=None,
        alias="gatedModelDownloadRole",
        max_length=2048,
        min_length=20,
        pattern="^arn:aws[a-z\\-]*:iam::\\d{12}:role/?[a-zA-Z_0-9+=,.@\\-_/]+$",
        description="The Amazon Resource Name (ARN) of an IAM role that will be used to download gated model",
    )
    model_hub_name: str | None = Field(
        default=None,
        alias="modelHubName",
        max_length=63,
        pattern="^[a-zA-Z0-9](-*[a-zA-Z0-9]){0,62}$",
        description="The name of the model hub content",
    )
    model_id: str = Field(
        alias="modelId",
        max_length=63,
        pattern="^[a-zA-Z0-9](-*[a-zA-Z0-9]){0,62}$",
        description="The unique identifier of the model within the specified hub (hubContentArn)",
    )
    model_version: str | None = Field(
        default=None,
        alias="modelVersion",
        max_length=14,
        min_length=5,
        pattern="^\\d{1,4}.\\d{1,4}.\\d{1,4}$",
        description="The version of the model to deploy, in semantic versioning format (e.g., 1.0.0)",
    )


class SageMakerEndpoint(CrdModel):
    """`sageMakerEndpoint`"""

    name: str | None = Field(
        default=None,
        alias="name",
        max_length=63,
        pattern="^$|^[a-zA-Z0-9](-*[a-zA-Z0-9]){0,62}$",
        description="Name of sagemaker endpoint",
    )


class ServerValidations(CrdModel):
    """`server.validations` — Validations configuration for the server"""

    accelerator_partition_validation: bool | None = Field(
        default=None, alias="acceleratorPartitionValidation", description="Enable MIG validation for GPU partitioning"
    )


class JumpStartServer(CrdModel):
    """`server`"""

    accelerator_partition_type: str | None = Field(
        default=None,
        alias="acceleratorPartitionType",
        pattern="^mig-.*$",
        description="MIG profile to use for GPU partitioning",
    )
    execution_role: str | None = Field(
        default=None,
        alias="executionRole",
        max_length=2048,
        min_length=20,
        pattern="^arn:aws[a-z\\-]*:iam::\\d{12}:role/?[a-zA-Z_0-9+=,.@\\-_/]+$",
        description="The Amazon Resource Name (ARN) of an IAM role that will be used to deploy and manage the inference server",
    )
    instance_type: str = Field(
        alias="instanceType", pattern="^ml\\..*", description="The EC2 instance type to use for the inference server"
    )
    validations: ServerValidations | None = Field(
        default=None, alias="validations", description="Validations configuration for the server"
    )


class JumpStartModelSpec(CrdModel):
    """`spec` — JumpStartModelSpec defines the desired state of JumpStartModel."""

    auto_scaling_spec: AutoScalingSpec | None = Field(default=None, alias="autoScalingSpec")
    data_capture: DataCapture | None = Field(
        default=None,
        alias="dataCapture",
        description="Configuration for data capture across multiple tiers (SageMaker, LoadBalancer, Model Pod)",
    )
    dns_config: DnsConfig | None = Field(
        default=None, alias="dnsConfig", description="DNS automation configuration for Route53"
    )
    environment_variables: list[EnvironmentVariable] | None = Field(
        default=None,
        alias="environmentVariables",
        max_length=100,
        description="Additional environment variables to be passed to the inference server",
    )
    intelligent_routing_spec: IntelligentRoutingSpec | None = Field(
        default=None,
        alias="intelligentRoutingSpec",
        description="Configuration for intelligent routing This feature is currently not supported for existing deployments",
    )
    kv_cache_spec: KvCacheSpec | None = Field(
        default=None,
        alias="kvCacheSpec",
        description="Configuration for KV Cache specification By default L1CacheOffloading will be enabled",
    )
    load_balancer: LoadBalancer | None = Field(
        default=None, alias="loadBalancer", description="Configuration for Application Load Balancer"
    )
    max_deploy_time_in_seconds: int | None = Field(
        default=None,
        alias="maxDeployTimeInSeconds",
        description="Maximum allowed time in seconds for the deployment to complete before timing out",
    )
    metrics: Metrics | None = Field(
        default=None, alias="metrics", description="Configuration for metrics collection and exposure"
    )
    model: JumpStartModelRef = Field(alias="model")
    # The CRD declares no minimum; a negative count is never valid (Kubernetes rejects negative replicas:
    # apps/v1 validation "must be greater than or equal to 0", k8s.io/kubernetes pkg/apis/apps/validation).
    replicas: int | None = Field(
        default=None, alias="replicas", ge=0, description="The desired number of inference server replicas"
    )
    sage_maker_endpoint: SageMakerEndpoint | None = Field(default=None, alias="sageMakerEndpoint")
    server: JumpStartServer = Field(alias="server")
    tls_config: TlsConfig | None = Field(default=None, alias="tlsConfig")
    model_cache_config: ModelCacheConfig | None = Field(default=None, alias="modelCacheConfig")
    inference_gateway: InferenceGateway | None = Field(default=None, alias="inferenceGateway")


# --- InferenceGatewayConfig v1alpha1 (AWS docs: Inference Gateway; operator-facts §7) ---------------------

K8sName = r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?$"


class BbrBackend(CrdModel):
    """`bbr.defaultBackend` — where body-based routing sends requests that name no known model."""

    name: str | None = Field(default=None, alias="name")
    port: int | None = Field(default=None, alias="port", ge=1, le=65535)


class Bbr(CrdModel):
    """`bbr` — body-based routing: reads the request body's ``model`` to pick a scheduler."""

    enabled: bool = Field(alias="enabled", description="Required; must be true with more than one scheduler.")
    replicas: int | None = Field(default=None, alias="replicas", ge=1)
    default_backend: BbrBackend | None = Field(default=None, alias="defaultBackend")
    max_request_body_bytes: int | None = Field(default=None, alias="maxRequestBodyBytes", ge=1, le=268435456)


class GatewayTls(CrdModel):
    """`tls` — ``{}`` auto-issues a certificate through cert-manager and imports it to ACM."""

    acm_arn: str | None = Field(
        default=None, alias="acmArn", pattern=r"^arn:aws[a-z-]*:acm:[a-z0-9-]+:[0-9]{12}:certificate/[a-fA-F0-9-]+$"
    )


class RemoteJwks(CrdModel):
    uri: str = Field(alias="uri", pattern=r"^https://", description="JWKS URL of the identity provider.")


class RequiredClaim(CrdModel):
    name: str = Field(alias="name", min_length=1)
    value_type: Literal["String", "StringArray"] | None = Field(default=None, alias="valueType")
    values: list[str] = Field(alias="values", min_length=1, max_length=128)

    @model_validator(mode="after")
    def _value_lengths(self) -> RequiredClaim:
        if any(not 1 <= len(v) <= 1024 for v in self.values):
            raise ValueError("each of values must be 1-1024 characters")
        return self


class JwtProvider(CrdModel):
    name: str = Field(alias="name", min_length=1)
    issuer: str = Field(alias="issuer", min_length=1)
    remote_jwks: RemoteJwks = Field(alias="remoteJWKS")
    audiences: list[str] | None = Field(default=None, alias="audiences", max_length=8)
    required_claims: list[RequiredClaim] | None = Field(default=None, alias="requiredClaims", max_length=16)

    @model_validator(mode="after")
    def _audiences_or_claims(self) -> JwtProvider:
        if not self.audiences and not self.required_claims:
            raise ValueError("a JWT provider needs audiences or requiredClaims (or both)")
        return self


class Jwt(CrdModel):
    provider: JwtProvider = Field(alias="provider")


class GatewayAuth(CrdModel):
    """`auth` — without it the gateway accepts any request that reaches it over the network."""

    jwt: Jwt = Field(alias="jwt")


class GatewayMetrics(CrdModel):
    enabled: bool | None = Field(default=None, alias="enabled")


class GatewayObservability(CrdModel):
    metrics: GatewayMetrics | None = Field(default=None, alias="metrics")


class PodDefaults(CrdModel):
    """`podDefaults` — Kubernetes pod settings applied to the gateway's pods (core types, free-form)."""

    resources: dict[str, Any] | None = Field(default=None, alias="resources")
    node_selector: dict[str, str] | None = Field(default=None, alias="nodeSelector")
    tolerations: list[dict[str, Any]] | None = Field(default=None, alias="tolerations")
    affinity: dict[str, Any] | None = Field(default=None, alias="affinity")
    labels: dict[str, str] | None = Field(default=None, alias="labels")
    annotations: dict[str, str] | None = Field(default=None, alias="annotations")
    env: list[dict[str, Any]] | None = Field(default=None, alias="env")
    env_from: list[dict[str, Any]] | None = Field(default=None, alias="envFrom")


class SchedulerWeights(CrdModel):
    queue: int | None = Field(default=None, alias="queue", ge=0)
    kv_cache: int | None = Field(default=None, alias="kvCache", ge=0)
    prefix: int | None = Field(default=None, alias="prefix", ge=0)
    lru: int | None = Field(default=None, alias="lru", ge=0)
    lora_affinity: int | None = Field(default=None, alias="loraAffinity", ge=0)
    running_requests: int | None = Field(default=None, alias="runningRequests", ge=0)
    predicted_latency: int | None = Field(default=None, alias="predictedLatency", ge=0)


class ConfigMapRef(CrdModel):
    name: str = Field(alias="name", min_length=1)
    key: str | None = Field(default=None, alias="key")


class GatewayScheduler(CrdModel):
    """`schedulers[]` — one endpoint picker per model (selects the model's pods by label)."""

    name: str = Field(alias="name", max_length=63, pattern=K8sName)
    model_selector: dict[str, Any] = Field(alias="modelSelector", description="Label selector of the model's pods.")
    model_name: str = Field(alias="modelName", min_length=1, max_length=253)
    target_port: int | None = Field(default=None, alias="targetPort", ge=1, le=65535)
    app_protocol: Literal["http", "kubernetes.io/h2c"] | None = Field(default=None, alias="appProtocol")
    scheduler: Literal["llm-d", "epp"] | None = Field(default=None, alias="scheduler")
    engine_type: Literal["vllm", "sglang"] | None = Field(default=None, alias="engineType")
    weights: SchedulerWeights | None = Field(default=None, alias="weights")
    config_map_ref: ConfigMapRef | None = Field(default=None, alias="configMapRef")
    replicas: int | None = Field(default=None, alias="replicas", ge=1)
    env: list[dict[str, Any]] | None = Field(default=None, alias="env")
    env_from: list[dict[str, Any]] | None = Field(default=None, alias="envFrom")
    lora_adapters: list[str] | None = Field(default=None, alias="loraAdapters", max_length=50)
    route_timeout: str | None = Field(
        default=None,
        alias="routeTimeout",
        pattern=r"^([0-9]{1,5}(h|m|s|ms)){1,4}$",
        description="Gateway API duration.",
    )
    log_level: int | None = Field(default=None, alias="logLevel", ge=0, le=5)

    @model_validator(mode="after")
    def _documented_rules(self) -> GatewayScheduler:
        if self.weights is not None and self.config_map_ref is not None:
            raise ValueError("weights and configMapRef are mutually exclusive")
        if self.weights is not None and self.weights.lru is not None and self.scheduler not in (None, "llm-d"):
            raise ValueError("weights.lru is only valid with scheduler: llm-d")
        if any(not 1 <= len(a) <= 253 for a in self.lora_adapters or []):
            raise ValueError("each loraAdapters entry must be 1-253 characters")
        return self


class InferenceGatewayConfigSpec(CrdModel):
    """InferenceGatewayConfig v1alpha1 spec (add-on v2.0.0-eksbuild.2+): one gateway in front of many models."""

    bbr: Bbr = Field(alias="bbr")
    tls: GatewayTls | None = Field(default=None, alias="tls")
    auth: GatewayAuth | None = Field(default=None, alias="auth")
    observability: GatewayObservability | None = Field(default=None, alias="observability")
    pod_defaults: PodDefaults | None = Field(default=None, alias="podDefaults")
    schedulers: list[GatewayScheduler] = Field(alias="schedulers", min_length=1, max_length=100)

    @model_validator(mode="after")
    def _documented_rules(self) -> InferenceGatewayConfigSpec:
        names = [s.model_name for s in self.schedulers]
        dupes = sorted({n for n in names if names.count(n) > 1})
        if dupes:
            raise ValueError(f"schedulers[].modelName must be unique; repeated: {', '.join(dupes)}")
        sched = [s.name for s in self.schedulers]
        if len(set(sched)) != len(sched):
            raise ValueError("schedulers[].name must be unique")
        if len(self.schedulers) > 1 and not self.bbr.enabled:
            raise ValueError("bbr.enabled must be true with more than one scheduler")
        return self
