"""The policies of an applied tenant, read back from AWS (or the emulator), never from the synthesized JSON.

``read_applied_tenant(lake, client)`` takes the tenant's Terraform outputs (``lake.json``) and a
boto3 client factory, and reads: both bucket policies (``GetBucketPolicy``), the key policy
(``GetKeyPolicy``), every role's inline and attached policies (IAM), the Firehose roles of its
delivery streams (``DescribeDeliveryStream``) and the policy of its S3 gateway endpoint
(``DescribeVpcEndpoints``).  The access matrix evaluates exactly these documents. It also checks that
the tenant's Glue databases and Athena workgroups exist (``GetDatabase``, ``GetWorkGroup``): their ARNs
are the resources of the Glue and Athena cells, decided by the identity policies alone (neither has a
resource policy in this module). A tenant with a maintenance schedule: the scheduler role's policies, and
the schedule (``GetSchedule``) must start its runs as that role; the virtual cluster's ARN is the resource
of the StartJobRun cells. Lake Formation's data-access role (output ``lake_formation``) is read like the tenant
roles; Lake Formation's own tags and grants are read by ``policies.lake_formation``. A tenant with orchestration
(output ``orchestration``): its state machine's, schedules' and arrival rules' roles, the alerts topic's policy
(``GetTopicAttributes``) and the dead-letter queue's (``GetQueueAttributes``). A reader of personal data
(``lake_formation.personal_data_reader_arns``, the first) is evaluated with the managed policy the module makes for
the readers (``GetPolicy``, ``GetPolicyVersion``): the policy it is meant to have attached.
"""
from __future__ import annotations

import dataclasses
import json
from typing import Any, Callable, Mapping

import tenant_model

# The tenant roles by matrix kind, and the output that names each.
ROLE_OUTPUTS: dict[str, str] = {
    "job_role": "job_execution_role_arn",
    "ingest_writer": "ingest_writer_role_arn",
    "consumer": "consumer_role_arn",
    "erasure_role": "erasure_role_arn",
}

ClientFactory = Callable[..., Any]  # client(service, region) -> boto3 client


@dataclasses.dataclass(frozen=True)
class RoleIdentity:
    """A role, its identity policies as IAM returns them (``[{"name": ..., "policy": {...}}]``) and its
    trust policy (who may assume it)."""

    arn: str
    policies: tuple[dict, ...]
    trust: dict = dataclasses.field(default_factory=dict)

    @property
    def name(self) -> str:
        return self.arn.rsplit("/", 1)[-1]

    @property
    def account_id(self) -> str:
        return self.arn.split(":")[4]


@dataclasses.dataclass(frozen=True)
class AppliedTenant:
    """Everything the matrix needs of one applied tenant."""

    tenant_id: str
    region: str
    account_id: str
    lake_bucket: str
    log_bucket: str
    key_arn: str
    lake_policy: dict
    log_policy: dict
    key_policy: dict
    roles: Mapping[str, RoleIdentity]
    firehose_roles: Mapping[str, RoleIdentity]
    gateway_endpoint_id: str
    gateway_endpoint_policy: dict
    stream_arns: Mapping[str, str] = dataclasses.field(default_factory=dict)
    glue_databases: Mapping[str, str] = dataclasses.field(default_factory=dict)
    athena_workgroup: str = ""
    virtual_cluster_arn: str = ""
    scheduler_role: RoleIdentity | None = None  # the maintenance schedule's role, when the tenant has one
    emr_namespace: str = ""
    lake_formation_role: RoleIdentity | None = None  # Lake Formation's data-access role (modules/lake_formation.py)
    # Orchestration (output ``orchestration``): matrix kind -> role, and the resources' policies as applied.
    orchestration_roles: Mapping[str, RoleIdentity] = dataclasses.field(default_factory=dict)
    topic_policy: dict | None = None
    dlq_policy: dict | None = None

    def _name(self, kind: str) -> str:
        return tenant_model.render_name(kind, tenant_id=self.tenant_id)

    @property
    def pipeline_state_machine_arn(self) -> str:
        return f"arn:aws:states:{self.region}:{self.account_id}:stateMachine:{self._name('pipeline_state_machine')}"

    @property
    def alerts_topic_arn(self) -> str:
        return f"arn:aws:sns:{self.region}:{self.account_id}:{self._name('alerts_topic')}"

    @property
    def trigger_dlq_arn(self) -> str:
        return f"arn:aws:sqs:{self.region}:{self.account_id}:{self._name('trigger_dlq')}"

    @property
    def metric_namespace(self) -> str:
        return self._name("metric_namespace")

    @property
    def event_source(self) -> str:
        return self._name("event_source")

    @property
    def default_event_bus_arn(self) -> str:
        return f"arn:aws:events:{self.region}:{self.account_id}:event-bus/default"

    @property
    def example_rule_arn(self) -> str:
        return f"arn:aws:events:{self.region}:{self.account_id}:rule/{self._name('emr_job_failed_rule')}"

    @property
    def example_alarm_arn(self) -> str:
        name = tenant_model.pipeline_name("freshness_alarm", "iot", tenant_id=self.tenant_id)
        return f"arn:aws:cloudwatch:{self.region}:{self.account_id}:alarm:{name}"
    # The first reader of personal data (lake_formation.personal_data_reader_arns) with the managed policy the module
    # makes for the readers (output personal_data_reader.policy_arn), and the readers' Athena workgroup.
    personal_data_reader: RoleIdentity | None = None
    personal_workgroup: str = ""

    def glue_table_arn(self, layer: str, table: str) -> str:
        if layer not in self.glue_databases:
            raise ValueError(f"tenant {self.tenant_id!r} has no Glue database for layer {layer!r} "
                             f"(its databases: {', '.join(sorted(self.glue_databases)) or 'none'})")
        return f"arn:aws:glue:{self.region}:{self.account_id}:table/{self.glue_databases[layer]}/{table}"

    def workgroup_arn(self, which: str = "") -> str:
        """The consumer's workgroup (``which`` empty), or the readers of personal data's (``personal``)."""
        name = self.personal_workgroup if which == "personal" else self.athena_workgroup
        return f"arn:aws:athena:{self.region}:{self.account_id}:workgroup/{name}"

    @property
    def lake_arn(self) -> str:
        return f"arn:aws:s3:::{self.lake_bucket}"

    @property
    def log_bucket_arn(self) -> str:
        return f"arn:aws:s3:::{self.log_bucket}"


def _document(value: Any) -> dict:
    return json.loads(value) if isinstance(value, str) else value


def managed_policy(iam, policy_arn: str) -> dict:
    """A managed policy's default version, as ``{"name": <arn>, "policy": {...}}``."""
    version = iam.get_policy(PolicyArn=policy_arn)["Policy"]["DefaultVersionId"]
    document = iam.get_policy_version(PolicyArn=policy_arn, VersionId=version)["PolicyVersion"]["Document"]
    return {"name": policy_arn, "policy": _document(document)}


def role_identity(iam, arn: str) -> RoleIdentity:
    """The role's inline policies, then its attached managed policies (default versions)."""
    name = arn.rsplit("/", 1)[-1]
    policies = []
    for policy_name in sorted(iam.list_role_policies(RoleName=name)["PolicyNames"]):
        document = iam.get_role_policy(RoleName=name, PolicyName=policy_name)["PolicyDocument"]
        policies.append({"name": f"{name}/{policy_name}", "policy": _document(document)})
    for attached in iam.list_attached_role_policies(RoleName=name)["AttachedPolicies"]:
        policies.append(managed_policy(iam, attached["PolicyArn"]))
    trust = _document(iam.get_role(RoleName=name)["Role"]["AssumeRolePolicyDocument"])
    return RoleIdentity(arn=arn, policies=tuple(policies), trust=trust)


def gateway_endpoint_id(lake: Mapping[str, Any]) -> str:
    """The S3 gateway endpoint the tenant's jobs come through (the first, by VPC id, if it has several).

    Read from the tenant's outputs: tenants that share a cluster VPC report the same (shared) endpoint.
    """
    ids = lake.get("gateway_endpoint_ids") or {}
    if not ids:
        raise ValueError(f"tenant {lake.get('tenant_id')!r}: its outputs name no S3 gateway endpoint "
                         "(gateway_endpoint_ids)")
    return ids[sorted(ids)[0]] if isinstance(ids, Mapping) else sorted(ids)[0]


def read_applied_tenant(lake: Mapping[str, Any], client: ClientFactory) -> AppliedTenant:
    """Read back every policy of the tenant whose Terraform outputs are ``lake``."""
    region = lake["region"]
    s3, iam, kms = client("s3", region), client("iam", region), client("kms", region)
    ec2, firehose = client("ec2", region), client("firehose", region)
    roles = {kind: role_identity(iam, lake[output]) for kind, output in ROLE_OUTPUTS.items()}
    firehose_roles = {}
    for dataset, stream in sorted((lake.get("firehose_delivery_stream_names") or {}).items()):
        description = firehose.describe_delivery_stream(DeliveryStreamName=stream)["DeliveryStreamDescription"]
        destination = description["Destinations"][0]
        s3_destination = destination.get("ExtendedS3DestinationDescription") or destination["S3DestinationDescription"]
        firehose_roles[dataset] = role_identity(iam, s3_destination["RoleARN"])
    glue, athena = client("glue", region), client("athena", region)
    databases = dict(lake.get("glue_database_names") or {})
    for name in databases.values():
        glue.get_database(Name=name)  # raises EntityNotFoundException when the output names nothing
    workgroup = str(lake.get("athena_workgroup_name") or "")
    reader_outputs = lake.get("personal_data_reader") or {}
    personal_workgroup = str(reader_outputs.get("workgroup") or "")
    for name in (workgroup, personal_workgroup):
        if name:
            athena.get_work_group(WorkGroup=name)
    # A reader is the tenant's own principal, not the module's: the module's policy for it, as an attached one.
    readers = (lake.get("lake_formation") or {}).get("personal_data_readers") or []
    personal_data_reader = (RoleIdentity(arn=readers[0], policies=(managed_policy(iam, reader_outputs["policy_arn"]),))
                            if readers and reader_outputs.get("policy_arn") else None)
    scheduler_role = None
    if lake.get("maintenance_scheduler_role_arn"):
        scheduler_role = role_identity(iam, lake["maintenance_scheduler_role_arn"])
        schedule = client("scheduler", region).get_schedule(Name=lake["maintenance_schedule_name"], GroupName="default")
        if schedule["Target"]["RoleArn"] != scheduler_role.arn:
            raise ValueError(f"tenant {lake['tenant_id']!r}: its maintenance schedule starts runs as "
                             f"{schedule['Target']['RoleArn']}, not {scheduler_role.arn}")
    lake_formation_arn = (lake.get("lake_formation") or {}).get("data_access_role_arn")
    lake_formation_role = role_identity(iam, lake_formation_arn) if lake_formation_arn else None
    orchestration_roles, topic_policy, dlq_policy = read_orchestration(lake, client, iam)
    endpoint_id = gateway_endpoint_id(lake)
    (endpoint,) = ec2.describe_vpc_endpoints(VpcEndpointIds=[endpoint_id])["VpcEndpoints"]
    return AppliedTenant(
        tenant_id=lake["tenant_id"], region=region, account_id=roles["job_role"].account_id,
        lake_bucket=lake["lake_bucket_name"], log_bucket=lake["log_bucket_name"], key_arn=lake["kms_key_arn"],
        lake_policy=_document(s3.get_bucket_policy(Bucket=lake["lake_bucket_name"])["Policy"]),
        log_policy=_document(s3.get_bucket_policy(Bucket=lake["log_bucket_name"])["Policy"]),
        key_policy=_document(kms.get_key_policy(KeyId=lake["kms_key_arn"], PolicyName="default")["Policy"]),
        roles=roles, firehose_roles=firehose_roles, gateway_endpoint_id=endpoint_id,
        gateway_endpoint_policy=_document(endpoint["PolicyDocument"]),
        stream_arns={dataset: f"arn:aws:kinesis:{region}:{roles['job_role'].account_id}:stream/{name}"
                     for dataset, name in (lake.get("kinesis_stream_names") or {}).items()},
        glue_databases=databases, athena_workgroup=workgroup,
        virtual_cluster_arn=str(lake.get("emr_virtual_cluster_arn") or ""), scheduler_role=scheduler_role,
        emr_namespace=str(lake.get("emr_namespace") or ""), lake_formation_role=lake_formation_role,
        orchestration_roles=orchestration_roles, topic_policy=topic_policy, dlq_policy=dlq_policy,
        personal_data_reader=personal_data_reader, personal_workgroup=personal_workgroup,
    )


# The orchestration's roles by matrix kind, and the key of the output ``orchestration`` that names each.
ORCHESTRATION_ROLE_OUTPUTS: dict[str, str] = {
    "pipeline_runner_role": "runner_role_arn",
    "pipeline_scheduler_role": "scheduler_role_arn",
    "pipeline_events_role": "events_role_arn",
}


def read_orchestration(lake: Mapping[str, Any], client: ClientFactory, iam) -> tuple[dict, dict | None, dict | None]:
    """(roles by kind, topic policy, dead-letter queue policy) of a tenant with orchestration; empty without."""
    outputs = lake.get("orchestration") or {}
    if not outputs.get("enabled"):
        return {}, None, None
    region = lake["region"]
    roles = {kind: role_identity(iam, outputs[key]) for kind, key in ORCHESTRATION_ROLE_OUTPUTS.items()}
    topic = client("sns", region).get_topic_attributes(TopicArn=outputs["alerts_topic_arn"])["Attributes"]
    queue = client("sqs", region).get_queue_attributes(QueueUrl=outputs["trigger_dlq_url"],
                                                       AttributeNames=["Policy"])["Attributes"]
    return roles, _document(topic["Policy"]), _document(queue["Policy"])
