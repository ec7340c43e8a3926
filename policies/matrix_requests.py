"""Access-matrix cells as IAM simulator requests, built the way AWS builds the request context.

A cell says *who* (a principal kind), *what* (action, bucket, key) and *how* (TLS, endpoint, headers);
this module turns it into an ``@cloud-copilot/iam-simulate`` ``Simulation`` against the applied
tenants' policies (``policies.tenant_policies.AppliedTenant``):

* a tenant role acts as a **session** of it: the request principal is
  ``arn:aws:sts::<account>:assumed-role/<role>/<session>`` while ``aws:PrincipalArn`` is the role's
  ARN ``arn:aws:iam::<account>:role/<role>`` (what bucket-policy allow-lists must name);
  ``aws:PrincipalIsAWSService`` is ``false``;
* the S3 log delivery service signs as ``logging.s3.amazonaws.com``: ``aws:PrincipalIsAWSService``
  is ``true``, no ``aws:PrincipalArn``, and ``aws:SourceArn``/``aws:SourceAccount`` name the bucket
  whose access it logs;
* an anonymous request carries no principal keys at all;
* a request through the tenant's S3 gateway endpoint carries ``aws:SourceVpce`` and is also
  evaluated against that endpoint's policy; one from elsewhere carries no ``aws:SourceVpce`` (or
  another VPC's endpoint id, whose policy we do not have);
* an ``s3:PutObject`` that creates an object (a PUT, a multipart completion) carries
  ``s3:ObjectCreationOperation = true``, and ``s3:if-none-match = *`` when it sends ``If-None-Match: *``
  (create-only); a part of a multipart upload (``CreateMultipartUpload``, ``UploadPart``, also
  ``s3:PutObject``) carries ``s3:ObjectCreationOperation = false`` and cannot carry the header;
* a put's encryption headers are ``s3:x-amz-server-side-encryption`` (``aws:kms``, ``AES256``) and
  ``...-aws-kms-key-id``, or for SSE-C ``s3:x-amz-server-side-encryption-customer-algorithm`` alone (``AES256``);
  ``UploadPart`` and ``CompleteMultipartUpload`` carry none (S3 takes the encryption from
  ``CreateMultipartUpload``; an SSE-C upload's parts repeat the customer key), nor does a put that leaves the
  encryption to the bucket default;
* SSE-KMS calls S3 makes for a put or get are ``kms:ViaService = s3.<region>.amazonaws.com`` with
  the bucket ARN as ``aws:s3:arn`` encryption context (S3 Bucket Key is on for the lake); those
  Kinesis makes for an encrypted stream are ``kinesis.<region>.amazonaws.com`` with the stream's
  ARN as ``aws:kinesis:arn``;
* an S3 request Athena makes for its caller (forward access sessions) is signed as the caller, carries
  ``aws:CalledVia = [athena.amazonaws.com]`` (and ``aws:CalledViaFirst``/``Last``),
  ``aws:ViaAWSService = true`` and no ``aws:SourceVpce``: it comes from AWS's network;
* Glue and Athena requests name the table (``table/<database>/<table>``) or the workgroup; no resource
  policy applies (the module sets none), so the identity policies decide; ``lakeformation:GetDataAccess`` names
  no resource (``*``): the identity policy decides whether a principal may ask, Lake Formation's grants what it gets
  (``policies.lake_formation``);
* ``emr-containers:StartJobRun`` names the tenant's virtual cluster and carries
  ``emr-containers:ExecutionRoleArn`` (the run's role); ``iam:PassRole`` names the passed role and carries
  ``iam:PassedToService = emr-containers.amazonaws.com``: identity policies alone decide both.
* orchestration: ``emr-containers:DescribeJobRun``/``CancelJobRun`` name a job run of the tenant's virtual cluster;
  ``states:StartExecution`` the tenant's pipeline state machine; ``sqs:SendMessage`` its triggers' dead-letter queue
  (its queue policy, read back, is the resource policy); ``sns:Publish`` its alerts topic (the topic policy, read
  back), over TLS; ``cloudwatch:PutMetricData`` no resource, with ``cloudwatch:namespace`` the tenant's
  (``tenantlake/<tenant>``) or another tenant's; ``events:PutEvents`` the default event bus, with ``events:source``
  (``tenantlake.<tenant>``) and ``events:detail-type``; a KMS call SNS makes to encrypt a message is
  ``kms:ViaService = sns.<region>.amazonaws.com``. EventBridge and CloudWatch publishing to the topic sign as their
  service principals, with ``aws:SourceArn`` one of the tenant's rules or alarms (or another tenant's) and
  ``aws:SourceAccount``. A tenant without orchestration (the other tenant) is named by its resources' name templates.
* a pod of an EMR on EKS run assumes a role with its web-identity token: the request principal is the
  EKS cluster's OIDC provider (the ``Federated`` principal of the pod's own role's trust), the keys
  ``<issuer>:sub`` (``system:serviceaccount:<namespace>:emr-containers-sa-spark-driver-<job>-<account>-
  <base36 of the run's role name>``, ``tenant_model.emr_service_account``) and ``<issuer>:aud``
  (``sts.amazonaws.com``); the assumed role's trust policy, read back from IAM, decides.

The simulator does not fill any of these keys in by itself: what is not set here is absent.
"""
from __future__ import annotations

from typing import Any, Mapping

import tenant_model
from policies.access_matrix import LIST_ACTIONS, SERVICE_ACCOUNT_KINDS, SERVICE_PRINCIPALS, Cell, Matrix
from policies.tenant_policies import AppliedTenant, RoleIdentity

SESSION_NAME = "tenantlake-matrix"
LOG_DELIVERY_SERVICE = SERVICE_PRINCIPALS["s3_log_delivery"]
EXAMPLE_JOB_RUN_ID = "0000000360abcdefgh1"
FOREIGN_ENDPOINT = "vpce-0f0f0f0f0f0f0f0f0"  # an S3 endpoint of some VPC that is not the tenant's
OTHER_ACCOUNT_ROLE = "partner-admin"
ATHENA_SERVICE = "athena.amazonaws.com"
EMR_CONTAINERS_SERVICE = "emr-containers.amazonaws.com"
WEB_IDENTITY_AUDIENCE = "sts.amazonaws.com"
# The role a pod of each service-account kind runs as: (whose tenant, which role).
SERVICE_ACCOUNT_ROLES = {"job_service_account": ("owner", "job_role"), "erasure_service_account": ("owner", "erasure_role"),
                         "other_tenant_job_service_account": ("other", "job_role")}


def other_tenant(matrix: Matrix, tenant_id: str) -> str:
    """The tenant that plays "another tenant" for ``tenant_id``."""
    return matrix.tenants["other"] if tenant_id != matrix.tenants["other"] else matrix.tenants["owner"]


def session_arn(role_arn: str) -> str:
    account, name = role_arn.split(":")[4], role_arn.rsplit("/", 1)[-1]
    return f"arn:aws:sts::{account}:assumed-role/{name}/{SESSION_NAME}"


def _bool(value: bool) -> str:
    return "true" if value else "false"


class RequestBuilder:
    """Builds the ``Simulation`` of each cell.

    Args:
        matrix: the loaded matrix.
        tenants: tenant id -> its policies read back (every tenant the matrix names).
        admin_arn: the deployer's principal ARN as ``aws:PrincipalArn`` carries it (a role ARN for a
            role session, a user ARN for a user), i.e. what the module resolved as its admin.
        admin_caller_arn: the deployer's caller ARN (the session ARN of a role).  @default - admin_arn
    """

    def __init__(self, matrix: Matrix, tenants: Mapping[str, AppliedTenant], admin_arn: str,
                 admin_caller_arn: str = "") -> None:
        self.matrix, self.tenants = matrix, tenants
        self.admin_arn, self.admin_caller_arn = admin_arn, admin_caller_arn or admin_arn

    # ---- who -----------------------------------------------------------------------------------
    def role(self, cell: Cell) -> RoleIdentity | None:
        tenant = self.tenants[self.matrix.tenant_id(cell.tenant)]
        if cell.principal in ("job_role", "ingest_writer", "consumer", "erasure_role"):
            return tenant.roles[cell.principal]
        if cell.principal == "firehose_role":
            dataset = self.matrix.streaming_dataset
            if dataset not in tenant.firehose_roles:
                raise ValueError(f"cell {cell.id}: tenant {tenant.tenant_id} has no Firehose role for "
                                 f"{dataset!r} (its streams: {', '.join(tenant.firehose_roles) or 'none'})")
            return tenant.firehose_roles[dataset]
        if cell.principal == "other_tenant_job_role":
            return self.tenants[other_tenant(self.matrix, tenant.tenant_id)].roles["job_role"]
        if cell.principal == "other_tenant_consumer":
            return self.tenants[other_tenant(self.matrix, tenant.tenant_id)].roles["consumer"]
        if cell.principal == "other_tenant_erasure_role":
            return self.tenants[other_tenant(self.matrix, tenant.tenant_id)].roles["erasure_role"]
        if cell.principal == "personal_data_reader":
            if tenant.personal_data_reader is None:
                raise ValueError(f"cell {cell.id}: tenant {tenant.tenant_id} names no reader of personal data "
                                 "(lake_formation.personal_data_reader_arns) or its outputs no personal_data_reader policy")
            return tenant.personal_data_reader
        if cell.principal == "lake_formation_role":
            if tenant.lake_formation_role is None:
                raise ValueError(f"cell {cell.id}: tenant {tenant.tenant_id}'s outputs name no Lake Formation role "
                                 "(lake_formation.data_access_role_arn)")
            return tenant.lake_formation_role
        if cell.principal in ("pipeline_runner_role", "pipeline_scheduler_role", "pipeline_events_role"):
            owner = self.tenants[self.matrix.tenant_id("owner")]  # the owner's roles, on any tenant's resources
            if cell.principal not in owner.orchestration_roles:
                raise ValueError(f"cell {cell.id}: tenant {owner.tenant_id} has no orchestration "
                                 "(orchestration.enabled)")
            return owner.orchestration_roles[cell.principal]
        if cell.principal in ("scheduler_role", "other_tenant_scheduler_role"):
            owner = tenant if cell.principal == "scheduler_role" else \
                self.tenants[other_tenant(self.matrix, tenant.tenant_id)]
            if owner.scheduler_role is None:
                raise ValueError(f"cell {cell.id}: tenant {owner.tenant_id} has no maintenance schedule "
                                 "(maintenance_schedule.enabled)")
            return owner.scheduler_role
        return None

    def principal(self, cell: Cell) -> tuple[Any, dict[str, str]]:
        """The request principal and the principal's context keys."""
        role = self.role(cell)
        if role is not None:
            return session_arn(role.arn), self._signed(role.arn, role.account_id)
        if cell.principal == "admin":
            return self.admin_caller_arn, self._signed(self.admin_arn, self.admin_arn.split(":")[4])
        if cell.principal == "other_account":
            arn = f"arn:aws:iam::{self.matrix.other_account_id}:role/{OTHER_ACCOUNT_ROLE}"
            return session_arn(arn), self._signed(arn, self.matrix.other_account_id)
        if cell.principal == "anonymous":
            return {"type": "Anonymous"}, {}
        if cell.principal in SERVICE_PRINCIPALS:
            return SERVICE_PRINCIPALS[cell.principal], self._service(cell)
        raise ValueError(f"cell {cell.id}: unknown principal kind {cell.principal}")

    @staticmethod
    def _signed(principal_arn: str, account: str) -> dict[str, str]:
        return {"aws:PrincipalArn": principal_arn, "aws:PrincipalAccount": account,
                "aws:PrincipalIsAWSService": "false"}

    def _service(self, cell: Cell) -> dict[str, str]:
        tenant = self.tenants[self.matrix.tenant_id(cell.tenant)]
        other = self.tenants[other_tenant(self.matrix, tenant.tenant_id)]
        source = {"lake": tenant.lake_arn, "logs": tenant.log_bucket_arn, "other_lake": other.lake_arn,
                  "rule": tenant.example_rule_arn, "other_rule": other.example_rule_arn,
                  "alarm": tenant.example_alarm_arn, "other_alarm": other.example_alarm_arn}
        account = tenant.account_id if cell.context["source_account"] == "own" else self.matrix.other_account_id
        return {"aws:PrincipalIsAWSService": "true", "aws:PrincipalServiceName": SERVICE_PRINCIPALS[cell.principal],
                "aws:SourceArn": source[cell.context["source"]], "aws:SourceAccount": account}

    def identity_policies(self, cell: Cell) -> list[dict]:
        if cell.identity == "none":
            return []
        if cell.identity == "applied":
            return [dict(p) for p in self.role(cell).policies]
        return [{"name": cell.identity, "policy": self.matrix.identity_policies[cell.identity]}]

    def web_identity(self, cell: Cell) -> tuple[str, dict[str, str]]:
        """A pod's web-identity request: its cluster's OIDC provider and its token's ``sub`` and ``aud``."""
        owner = self.tenants[self.matrix.tenant_id(cell.tenant)]
        whose, kind = SERVICE_ACCOUNT_ROLES[cell.principal]
        pod_tenant = owner if whose == "owner" else self.tenants[other_tenant(self.matrix, owner.tenant_id)]
        role = pod_tenant.roles[kind]
        provider = federated_provider(role.trust)
        issuer = provider.split(":oidc-provider/", 1)[1]
        subject = tenant_model.emr_service_account(pod_tenant.emr_namespace, role.account_id, role.name)
        return provider, {f"{issuer}:sub": subject, f"{issuer}:aud": WEB_IDENTITY_AUDIENCE}

    # ---- what and how ----------------------------------------------------------------------------
    def simulation(self, cell: Cell) -> dict:
        tenant = self.tenants[self.matrix.tenant_id(cell.tenant)]
        other = self.tenants[other_tenant(self.matrix, tenant.tenant_id)]
        ctx = cell.context
        if cell.principal in SERVICE_ACCOUNT_KINDS:
            target = tenant.roles[cell.key]
            principal, context = self.web_identity(cell)
            return {"request": {"action": cell.action, "principal": principal,
                                "resource": {"resource": target.arn, "accountId": tenant.account_id},
                                "contextVariables": context},
                    "identityPolicies": [], "serviceControlPolicies": [], "resourceControlPolicies": [],
                    "resourcePolicy": target.trust}
        principal, context = self.principal(cell)
        endpoint_policies: list[dict] = []
        resource_policy: dict | None
        if cell.action.startswith("glue:"):
            resource, resource_policy = tenant.glue_table_arn(*cell.key.split("/")), None
        elif cell.action.startswith("athena:"):
            resource, resource_policy = tenant.workgroup_arn(cell.key), None
        elif cell.action.startswith("lakeformation:"):
            resource, resource_policy = "*", None  # GetDataAccess has no resource; identity policies decide
        elif cell.action in ("emr-containers:DescribeJobRun", "emr-containers:CancelJobRun"):
            if not tenant.virtual_cluster_arn:
                raise ValueError(f"cell {cell.id}: tenant {tenant.tenant_id}'s outputs name no emr_virtual_cluster_arn")
            resource, resource_policy = f"{tenant.virtual_cluster_arn}/jobruns/{EXAMPLE_JOB_RUN_ID}", None
        elif cell.action == "states:StartExecution":
            resource, resource_policy = tenant.pipeline_state_machine_arn, None
        elif cell.action == "sqs:SendMessage":
            resource, resource_policy = tenant.trigger_dlq_arn, tenant.dlq_policy
            context["aws:SecureTransport"] = _bool(ctx["tls"])
        elif cell.action == "sns:Publish":
            resource, resource_policy = tenant.alerts_topic_arn, tenant.topic_policy
            context["aws:SecureTransport"] = _bool(ctx["tls"])
        elif cell.action == "cloudwatch:PutMetricData":
            resource, resource_policy = "*", None
            context["cloudwatch:namespace"] = (tenant if ctx["signal"] == "own" else other).metric_namespace
        elif cell.action == "events:PutEvents":
            resource, resource_policy = tenant.default_event_bus_arn, None
            context["events:source"] = [(tenant if ctx["signal"] == "own" else other).event_source]  # one per entry
            context["events:detail-type"] = [tenant_model.PUBLISH_BLOCKED_DETAIL_TYPE]
        elif cell.action.startswith("emr-containers:"):
            if not tenant.virtual_cluster_arn:
                raise ValueError(f"cell {cell.id}: tenant {tenant.tenant_id}'s outputs name no emr_virtual_cluster_arn")
            resource, resource_policy = tenant.virtual_cluster_arn, None
            context["emr-containers:ExecutionRoleArn"] = tenant.roles[ctx["execution_role"]].arn
        elif cell.action == "iam:PassRole":
            resource, resource_policy = tenant.roles[cell.key].arn, None
            context["iam:PassedToService"] = EMR_CONTAINERS_SERVICE
        elif cell.action.startswith("kms:"):
            resource, resource_policy = tenant.key_arn, tenant.key_policy
            if ctx["kms_via"] != "none":
                context["kms:ViaService"] = f"{ctx['kms_via']}.{tenant.region}.amazonaws.com"
            if ctx["kms_context"] == "bucket":
                context["kms:EncryptionContext:aws:s3:arn"] = tenant.lake_arn
            elif ctx["kms_context"] == "object":
                context["kms:EncryptionContext:aws:s3:arn"] = f"{tenant.lake_arn}/{cell.key}"
            elif ctx["kms_context"] == "stream":
                dataset = self.matrix.streaming_dataset
                if dataset not in tenant.stream_arns:
                    raise ValueError(f"cell {cell.id}: tenant {tenant.tenant_id} has no {dataset!r} stream")
                context["kms:EncryptionContext:aws:kinesis:arn"] = tenant.stream_arns[dataset]
            if "aws:PrincipalAccount" in context:
                context["kms:CallerAccount"] = context["aws:PrincipalAccount"]
        else:
            bucket = tenant.lake_bucket if cell.bucket == "lake" else tenant.log_bucket
            resource_policy = tenant.lake_policy if cell.bucket == "lake" else tenant.log_policy
            if cell.action in LIST_ACTIONS:
                resource = f"arn:aws:s3:::{bucket}"
                context["s3:prefix"] = cell.key
            else:
                resource = f"arn:aws:s3:::{bucket}/{cell.key}"
            context["aws:SecureTransport"] = _bool(ctx["tls"])
            if ctx["called_via"] == "athena":
                if ctx["endpoint"] != "none":
                    raise ValueError(f"cell {cell.id}: Athena's requests come from AWS's network (endpoint: none)")
                context.update({"aws:CalledVia": [ATHENA_SERVICE], "aws:CalledViaFirst": ATHENA_SERVICE,
                                "aws:CalledViaLast": ATHENA_SERVICE})
            if ctx["endpoint"] == "own":
                context["aws:SourceVpce"] = tenant.gateway_endpoint_id
                endpoint_policies.append({"name": tenant.gateway_endpoint_id, "policy": tenant.gateway_endpoint_policy})
            elif ctx["endpoint"] == "foreign":
                context["aws:SourceVpce"] = FOREIGN_ENDPOINT
            if cell.principal not in ("anonymous", *SERVICE_PRINCIPALS):
                context["aws:ViaAWSService"] = _bool(ctx["via_aws_service"] or ctx["called_via"] != "none")
            if cell.action == "s3:PutObject":
                context["s3:ObjectCreationOperation"] = _bool(ctx["write_condition"] != "upload_part")
                if ctx["write_condition"] == "if_none_match":
                    context["s3:if-none-match"] = "*"
            if cell.action == "s3:PutObject" and ctx["sse"] == "customer":
                context["s3:x-amz-server-side-encryption-customer-algorithm"] = "AES256"
            elif cell.action == "s3:PutObject" and ctx["sse"] != "none":
                context["s3:x-amz-server-side-encryption"] = ctx["sse"]
                if ctx["sse"] == "aws:kms" and ctx["sse_key"] != "none":
                    key = tenant.key_arn if ctx["sse_key"] == "own" else other.key_arn
                    context["s3:x-amz-server-side-encryption-aws-kms-key-id"] = key
        simulation = {
            "request": {"action": cell.action, "principal": principal,
                        "resource": {"resource": resource, "accountId": tenant.account_id},
                        "contextVariables": context},
            "identityPolicies": self.identity_policies(cell),
            "serviceControlPolicies": [], "resourceControlPolicies": [],
        }
        if resource_policy is not None:
            simulation["resourcePolicy"] = resource_policy
        if endpoint_policies:
            simulation["vpcEndpointPolicies"] = endpoint_policies
        return simulation


def federated_provider(trust: Mapping[str, Any]) -> str:
    """The OIDC provider ARN a trust policy federates (its first ``Federated`` principal)."""
    for statement in trust.get("Statement", []):
        federated = (statement.get("Principal") or {}).get("Federated")
        if federated:
            return federated if isinstance(federated, str) else federated[0]
    raise ValueError("the trust policy federates no identity provider")


def principal_arn(caller_arn: str) -> str:
    """``aws:PrincipalArn`` of a caller: the role ARN for an assumed-role session, else the ARN itself."""
    parts = caller_arn.split(":", 5)
    if len(parts) == 6 and parts[2] == "sts" and parts[5].startswith("assumed-role/"):
        role = parts[5].split("/")[1]
        return f"arn:{parts[1]}:iam::{parts[4]}:role/{role}"
    return caller_arn
