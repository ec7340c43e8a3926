"""The CDKTF app: composes the constructs of ``modules/`` into the reusable tenant-lake stack.

The stack is synthesized once (``python -m infra.synth``); every tenant reuses it with its own
Terraform variables.  Importing this module imports the AWS provider bindings (~18 s).
"""
from __future__ import annotations

import dataclasses
import os

os.environ.setdefault("JSII_SILENCE_WARNING_END_OF_LIFE_NODE_VERSION", "20")

from cdktf import App, TerraformLocal, TerraformOutput, TerraformStack  # noqa: E402
from cdktf_cdktf_provider_aws.provider import AwsProvider  # noqa: E402
from constructs import Construct  # noqa: E402

import tenant_model as model  # noqa: E402
from modules.athena_workgroup import AthenaWorkgroupConfig, TenantWorkgroup  # noqa: E402
from modules.bucket_policy import BucketPolicy, BucketPolicyConfig, DeployerIdentity  # noqa: E402
from modules.emr_virtual_cluster import EmrVirtualCluster, EmrVirtualClusterConfig  # noqa: E402
from modules.glue_databases import GlueDatabases, GlueDatabasesConfig  # noqa: E402
from modules.inventory import LakeInventory, LakeInventoryConfig  # noqa: E402
from modules.job_roles import ROLE_ACCESS, CatalogGrants, JobRoles, JobRolesConfig  # noqa: E402
from modules.kms import TenantKey, TenantKeyConfig  # noqa: E402
from modules.lake_formation import LakeFormation, LakeFormationConfig  # noqa: E402
from modules.lake_bucket import LakeBucket, LakeBucketConfig  # noqa: E402
from modules.lifecycle import LakeLifecycle, LifecycleConfig  # noqa: E402
from modules.log_group import LogGroupConfig, TenantLogGroup  # noqa: E402
from modules.maintenance_schedule import MaintenanceSchedule, MaintenanceScheduleConfig  # noqa: E402
from modules.policy_document import ListExpr  # noqa: E402
from modules.refs import address, logical_id  # noqa: E402
from modules.skips import skip_check  # noqa: E402
from modules.stream_ingest import StreamIngest, StreamIngestConfig, firehose_role_arns  # noqa: E402
from modules.tenant_inputs import TenantInputs  # noqa: E402
from modules.vpc_endpoints import VpcEndpoints, VpcEndpointsConfig, kms_keys_statement  # noqa: E402
from infra.orchestration import add_orchestration  # noqa: E402
from infra.orchestration import key_principal_arns as orchestration_key_principal_arns  # noqa: E402
from infra.orchestration import key_statements as orchestration_key_statements  # noqa: E402

STACK_NAME = "tenant_lake"
REPLICATION_SKIP = ("Cross-region replication needs a second region and provider per tenant; the lake is "
                    "versioned and its layers are rebuildable from bronze. Revisit per tenant with a DR requirement.")


class TenantLakeStack(TerraformStack):
    """Everything one tenant needs.  Names every element after its construct path (see modules/refs.py)."""

    def _allocate_logical_id(self, tf_element) -> str:  # CDKTF hook, called once per element
        # Readable, stable addresses instead of CDKTF's hashed ids (expressions in modules/ rely on them).
        return logical_id(tf_element)

    def __init__(self, scope: Construct, id_: str = STACK_NAME) -> None:
        super().__init__(scope, id_)
        # Only so CDKTF validates; synth.py strips the provider block (Terragrunt generates provider.tf).
        AwsProvider(self, "aws", region="${var.region}")
        inputs = TenantInputs(self, "inputs")
        names, tags, partition = inputs.names, inputs.tags, inputs.partition
        deployer = DeployerIdentity(self, "deployer")
        lake_arn = f"arn:{partition}:s3:::{names['lake_bucket']}"
        log_group_arn = f"arn:{partition}:logs:{inputs.region}:{inputs.account_id}:log-group:{names['log_group']}"

        roles = JobRoles(self, "roles", JobRolesConfig(
            role_names={role: names[f"{role}_role"] for role in ROLE_ACCESS},
            partition=partition, account_id=inputs.account_id, oidc_provider_arn=inputs.oidc_provider_arn,
            oidc_issuer=inputs.oidc_issuer, emr_namespace=inputs.emr_namespace, tags=tags,
            reader_policy_name=names["personal_data_reader_policy"]))
        # Allow-lists of principal ARNs (aws:PrincipalArn form: a session's role ARN), as Terraform lists.
        # The Firehose roles' ARNs are rendered from their name template, not referenced: the key policy
        # and the lake policy name them, and the roles' permissions depend on the key.
        admins = f"concat([{deployer.arn_ref}], var.admin_principal_arns)"
        # Lake Formation (modules/lake_formation.py): the tenant's LF-tags and the role Lake Formation reads the
        # registered gold location with (a tenant principal of the lake and the key: it reads gold for Athena, from
        # AWS's network). The account's settings are the platform unit's (modules/lake_formation_settings.py).
        lake_formation = LakeFormation(self, "lf", LakeFormationConfig(
            tag_keys={"classification": names["lf_tag_classification"], "layer": names["lf_tag_layer"]},
            role_name=names["lake_formation_role"], account_id=inputs.account_id,
            role_arns={role: roles.arns[role] for role in ("job_execution", "erasure", "consumer")},
            reader_arns=ListExpr(inputs.lake_formation["personal_data_reader_arns"]), tags=tags))
        lake_formation_role = f"{address(lake_formation.role)}.arn"
        firehose_roles = firehose_role_arns("var.streams", "var.tenant_id", inputs.partition_ref, "var.account_id")
        tenant_roles = "[" + ", ".join([*(f"{address(r)}.arn" for r in roles.roles.values()), lake_formation_role]) + "]"
        # The readers of personal data query in a workgroup of their own (their results: athena/personal/): on the
        # lake's and the key's allow-lists, for those results; what else they reach is their identity policy's.
        readers = "var.lake_formation.personal_data_reader_arns"
        tenant_principals = ListExpr(f"${{concat({tenant_roles}, {firehose_roles}, {admins}, {readers})}}")
        # The maintenance scheduler decrypts its schedule's input with the key (and reaches no bucket): on
        # the key's allow-list only, by the ARN its name template gives (the role's policy names the key).
        scheduler_role = model.render_name("maintenance_scheduler_role", tenant_id="${var.tenant_id}")
        scheduler_arns = (f'var.maintenance_schedule.enabled ? ["arn:${{{inputs.partition_ref}}}:iam::'
                          f'${{var.account_id}}:role/{scheduler_role}"] : []')
        key = TenantKey(self, "kms", TenantKeyConfig(
            alias=names["kms_alias"], partition=partition, region=inputs.region, account_id=inputs.account_id,
            writer_role_arns=[roles.arns["job_execution"], roles.arns["ingest_writer"], roles.arns["erasure"]],
            reader_role_arns=[roles.arns["consumer"]],
            allowed_principal_arns=ListExpr(f"${{concat({tenant_roles}, {firehose_roles}, {admins}, {scheduler_arns}, "
                                            f"{readers}, {orchestration_key_principal_arns(inputs)})}}"),
            log_group_name=names["log_group"], tags=tags, inventory_source_arns=[lake_arn],
            service_statements=orchestration_key_statements(inputs)))

        # The log bucket logs nowhere (into itself it would log every delivery); the lake logs into it.
        log_bucket = LakeBucket(self, "log_bucket", LakeBucketConfig(
            bucket_name=names["log_bucket"], tags=tags, force_destroy=inputs.is_local, purpose="access-logs"))
        lake = LakeBucket(self, "lake", LakeBucketConfig(
            bucket_name=names["lake_bucket"], tags=tags, kms_key_arn=key.arn, log_bucket=log_bucket.id,
            force_destroy=inputs.is_local))
        skip_check(lake.bucket, "CKV_AWS_144", REPLICATION_SKIP)
        skip_check(log_bucket.bucket, "CKV_AWS_144", REPLICATION_SKIP)
        skip_check(log_bucket.bucket, "CKV_AWS_145",
                   "S3 server access logs are delivered only to buckets whose default encryption is SSE-S3 "
                   "(SSE-KMS is not supported for log delivery); the bucket holds access records, no tenant data.")

        # Athena query results expire like the job logs.
        LakeLifecycle(self, "lake_lifecycle", LifecycleConfig(
            bucket=lake.id, expiry_days={**{p: inputs.retention[p] for p in ("landing", "bronze", "quarantine", "logs")},
                                         model.ATHENA_RESULTS_PREFIX: inputs.retention["logs"]}))
        LakeLifecycle(self, "log_lifecycle", LifecycleConfig(
            bucket=log_bucket.id, prefixes=(), transitions={}, expiry_days={"": inputs.retention["logs"]}))

        # Endpoints in the tenant's own VPCs only; a shared cluster VPC's come from the platform network unit.
        endpoints = VpcEndpoints(self, "endpoints", VpcEndpointsConfig(
            vpc_ids=inputs.vpc_ids, region=inputs.region, name_prefix=f"{inputs.tenant_id}-lake",
            bucket_arns=[lake_arn], tags=tags, kms_statements=[kms_keys_statement([key.arn])]))
        gateway_ids = ListExpr(f"${{concat({endpoints.gateway_id_list[2:-1]}, "
                               f"values(var.shared_gateway_endpoint_ids))}}")
        BucketPolicy(self, "lake_policy", BucketPolicyConfig(
            bucket=lake.id, bucket_arn=lake.arn, vpc_endpoint_ids=gateway_ids,
            allowed_principal_arns=tenant_principals,
            # Firehose writes from AWS's network, never through the tenant's endpoints, and so does Athena with the
            # credentials Lake Formation vends from its data-access role: exempt by ARN only.
            endpoint_exempt_principal_arns=ListExpr(f"${{concat({admins}, {firehose_roles}, [{lake_formation_role}])}}"),
            # Athena reads gold and writes results for the consumer and the readers from AWS's network.
            athena_principal_arns=ListExpr(f"${{concat([{address(roles.roles['consumer'])}.arn], {readers})}}"),
            # The readers' results (personal columns) are theirs: not the consumer's, whatever its identity says.
            personal_results_prefix=model.ATHENA_RESULT_PREFIXES["personal"],
            personal_results_principal_arns=ListExpr(
                f"${{concat({readers}, [{address(roles.roles['erasure'])}.arn], {admins})}}"),
            # Landing writes are create-only (If-None-Match), except Firehose's: it writes unique keys.
            create_only_prefixes=model.INGEST_WRITER_PUT_PREFIXES, create_only_exempt_principal_arns=[
                f"arn:{partition}:iam::{inputs.account_id}:role/"
                + model.stream_name("firehose_role", "*", tenant_id="${var.tenant_id}")],
            kms_key_arn=key.arn), depends_on=[lake.public_access_block])
        log_policy = BucketPolicy(self, "log_policy", BucketPolicyConfig(
            bucket=log_bucket.id, bucket_arn=log_bucket.arn, vpc_endpoint_ids=gateway_ids,
            allowed_principal_arns=ListExpr(f"${{{admins}}}"), endpoint_exempt_principal_arns=ListExpr(f"${{{admins}}}"),
            log_delivery_source_arns=[lake_arn], inventory_source_arns=[lake_arn], account_id=inputs.account_id),
            depends_on=[log_bucket.public_access_block])
        lake.logging_after(log_policy.policy)
        # A daily Parquet list of every version of the lake, for `python -m spark_jobs usage`.
        inventory = LakeInventory(self, "lake_inventory", LakeInventoryConfig(
            bucket=lake.id, destination_bucket_arn=log_bucket.arn, account_id=inputs.account_id, kms_key_arn=key.arn),
            depends_on=[log_policy.policy])

        log_group = TenantLogGroup(self, "log_group", LogGroupConfig(
            name=names["log_group"], kms_key_arn=key.arn, retention_in_days=inputs.retention["logs"], tags=tags))
        # The table catalog on AWS: a Glue database per table layer, and the consumers' Athena workgroup.
        tenant_key = '${replace(var.tenant_id, "-", "_")}'
        # Created after the account's Lake Formation settings, so AWS gives them and their tables no IAMAllowedPrincipals
        # default: the tenant unit depends on the platform unit that holds them, and the runner refuses an apply where
        # the account still keeps that default (tenants/README.md, "Lake Formation settings").
        databases = GlueDatabases(self, "catalog", GlueDatabasesConfig(
            tenant_key=tenant_key, lake_bucket=names["lake_bucket"], tags=tags))
        lake_formation.grant(lake_arn=lake.arn, key_arn=key.arn, database_names=databases.names)
        # Query results per principal: the consumer's workgroup and the readers of personal data's, each enforcing
        # its own results folder (modules/athena_workgroup.py).
        workgroup = TenantWorkgroup(self, "athena", AthenaWorkgroupConfig(
            name=names["athena_workgroup"], lake_bucket=names["lake_bucket"], kms_key_arn=key.arn, tags=tags,
            force_destroy=inputs.is_local))
        personal_workgroup = TenantWorkgroup(self, "athena_personal", AthenaWorkgroupConfig(
            name=names["athena_personal_workgroup"], lake_bucket=names["lake_bucket"], kms_key_arn=key.arn, tags=tags,
            force_destroy=inputs.is_local, results_prefix=model.ATHENA_RESULT_PREFIXES["personal"],
            description="tenantlake: SQL on every column of the gold tables, for the readers of personal data"))
        glue_arn = f"arn:{partition}:glue:{inputs.region}:{inputs.account_id}"
        catalog = CatalogGrants(
            catalog_arn=f"{glue_arn}:catalog", database_arns=databases.arns,
            table_arns={layer: f"{glue_arn}:table/{model.glue_database_name(layer, tenant_key)}/*"
                        for layer in model.CATALOG_LAYERS},
            workgroup_arn=workgroup.arn)
        roles.grant(bucket_arn=lake.arn, key_arn=key.arn, log_group_arn=log_group_arn, catalog=catalog,
                    reader_catalog=dataclasses.replace(catalog, workgroup_arn=personal_workgroup.arn))
        emr = EmrVirtualCluster(self, "emr", EmrVirtualClusterConfig(
            name=names["virtual_cluster"], eks_cluster_name=inputs.eks_cluster_name,
            namespace=inputs.emr_namespace, tags=tags))
        deploy_target, request_options = module_deploy_target(
            inputs, key_arn=key.arn, job_role_arn=roles.arns["job_execution"], virtual_cluster=emr,
            database_names=databases.names, log_group_name=log_group.name)
        schedule = MaintenanceSchedule(self, "maintenance", maintenance_schedule_config(
            inputs, deploy_target, request_options, key_arn=key.arn, job_role_arn=roles.arns["job_execution"],
            virtual_cluster=emr))
        # The pipeline's automation on AWS (var.orchestration): state machine, triggers, alerts, freshness alarms.
        orchestration = add_orchestration(
            self, inputs, key_arn=key.arn, job_role_id=roles.roles["job_execution"].id,
            job_role_arn=roles.arns["job_execution"], virtual_cluster=emr, deploy_target=deploy_target,
            request_options=request_options)
        streams = StreamIngest(self, "streams", StreamIngestConfig(
            streams=inputs.streams, tenant_id=inputs.tenant_id, partition=partition, region=inputs.region,
            account_id=inputs.account_id, bucket_arn=lake.arn, key_arn=key.arn,
            ingest_writer_role=roles.roles["ingest_writer"].id, tags=tags))

        outputs = {
            "tenant_id": (inputs.tenant_id, "The tenant id."),
            "region": (inputs.region, "AWS region of the lake."),
            "data_classification": ("${var.data_classification}", "The tenant's data classification (the jobs "
                                    "require subject_keys in every contract when it includes pii or gdpr)."),
            "lake_bucket_name": (lake.name, "Name of the lake bucket (<tenant>-<region>-lake)."),
            "lake_bucket_arn": (lake.arn, "ARN of the lake bucket."),
            "log_bucket_name": (log_bucket.name, "Name of the bucket receiving the lake's S3 access logs."),
            "inventory": ({"id": inventory.name, "bucket": log_bucket.name, "prefix": inventory.prefix},
                          "The lake's S3 Inventory (daily, Parquet, every version): configuration id, and the bucket and "
                          "prefix its reports go to."),
            "kms_key_arn": (key.arn, "ARN of the tenant's KMS key; an upload that names a key must name this one."),
            "kms_key_alias": (key.alias.name, "Alias of the tenant's KMS key."),
            "job_execution_role_arn": (roles.arns["job_execution"], "ARN of the EMR on EKS job-execution role."),
            "ingest_writer_role_arn": (roles.arns["ingest_writer"], "ARN of the role that may only put objects under landing/."),
            "consumer_role_arn": (roles.arns["consumer"], "ARN of the read-only role for gold/ and reports/."),
            "erasure_role_arn": (roles.arns["erasure"], "ARN of the EMR on EKS role of erase job runs (GDPR erasure): "
                                 "the only tenant role that may delete object versions."),
            "emr_virtual_cluster_id": (emr.id, "Id of the tenant's EMR on EKS virtual cluster."),
            "emr_virtual_cluster_arn": (emr.arn, "ARN of the tenant's EMR on EKS virtual cluster."),
            "retention_days": ("${local.retention}", "Retention in days per key of retention_days, defaults "
                               "filled in (snapshots: the Iceberg snapshot retention of table maintenance)."),
            "maintenance_scheduler_role_arn": (schedule.role_arn, "ARN of the role the maintenance schedule "
                                               "starts job runs with (\"\" without a schedule)."),
            "maintenance_schedule_name": (schedule.schedule_name, "The EventBridge Scheduler schedule of table "
                                          "maintenance, group default (\"\" without a schedule)."),
            "emr_namespace": (inputs.emr_namespace, "Kubernetes namespace of the tenant's EMR jobs."),
            "log_group_name": (log_group.name, "CloudWatch log group of the tenant's EMR jobs."),
            "gateway_endpoint_ids": (f"${{merge(var.shared_gateway_endpoint_ids, {endpoints.gateway_ids[2:-1]})}}",
                                     "S3 gateway endpoint id per VPC id: the tenant's own VPCs and the shared network's."),
            "interface_endpoint_ids": (f"${{merge(var.shared_interface_endpoint_ids, {endpoints.interface_ids[2:-1]})}}",
                                       "Interface endpoint id per \"<vpc_id>.<service>\", own and shared."),
            "lake_prefixes": (list(model.LAKE_PREFIXES), "Top-level prefixes of the lake bucket."),
            "glue_database_names": (databases.names, "Glue database per table layer (silver, gold): the jobs' "
                                    "Iceberg catalog on AWS."),
            "athena_workgroup_name": (workgroup.name, "The consumer's Athena workgroup (results SSE-KMS under "
                                      "athena/consumer/)."),
            "personal_data_reader": ({"workgroup": personal_workgroup.name, "policy_arn": roles.reader_policy_arn,
                                      "results_prefix": f"{model.ATHENA_RESULT_PREFIXES['personal']}/"},
                                     "The readers of personal data: their Athena workgroup (results SSE-KMS under "
                                     "athena/personal/, which the consumer cannot read) and the managed policy to attach "
                                     "to each of lake_formation.personal_data_reader_arns."),
            "lake_formation": ({"classification_tag": lake_formation.tag_keys["classification"],
                                "layer_tag": lake_formation.tag_keys["layer"], "personal": model.LF_PERSONAL,
                                "not_personal": model.LF_NOT_PERSONAL, "data_access_role_arn": lake_formation.role_arn,
                                "registered_locations": lake_formation.location_arns,
                                "personal_data_readers": inputs.lake_formation["personal_data_reader_arns"]},
                               "Lake Formation: the tenant's LF-tag keys and values (spark_jobs/tables/lf_tags.py tags the columns of "
                               "the tables the jobs create), the role Lake Formation reads the registered locations with, "
                               "those locations, and the readers of personal data."),
            "kinesis_stream_names": (streams.stream_names, "Kinesis data stream name per streamed dataset (var.streams)."),
            "firehose_delivery_stream_names": (streams.delivery_stream_names,
                                               "Firehose delivery stream (into landing/<dataset>/) per streamed dataset."),
            "orchestration": (orchestration.outputs,
                              "The pipeline's automation (var.orchestration; \"\" and {} when it is off): the state machine and "
                              "its role, the alerts topic, the CloudWatch namespace and EventBridge source of the jobs' "
                              "signals, the schedules, arrival rules and their roles and dead-letter queue, the alert "
                              "rules (and, on the local emulator, the queue they deliver to), the freshness alarms and "
                              "targets per dataset."),
        }
        for name, (value, description) in outputs.items():
            TerraformOutput(self, name, value=value, description=description)


def module_deploy_target(inputs: TenantInputs, key_arn: str, job_role_arn: str, virtual_cluster: EmrVirtualCluster,
                         database_names: dict[str, str], log_group_name: str):
    """The deploy target of ``infra.deploy`` with the module's references instead of Terraform outputs, and the
    request options of the default release: what the module renders the requests of its schedules and of its
    state machine with (``infra.deploy.request``), so they are the requests a deploy builds from the outputs."""
    from infra.deploy import job_deps
    from infra.deploy.request import RequestOptions
    from infra.deploy.target import DeployTarget

    bucket = inputs.names["lake_bucket"]
    # The catalog's Spark name, as spark_jobs.lake.catalog.catalog_name derives it from the lake URI at run time.
    TerraformLocal(inputs, "maintenance_catalog_name", f'lake_${{substr(sha256("s3://{bucket}"), 0, 10)}}')
    TerraformLocal(inputs, "maintenance_classification", '${join(",", sort(var.data_classification))}')
    target = DeployTarget(
        tenant_id=inputs.tenant_id, region=inputs.region, bucket=bucket, kms_key_arn=key_arn, role_arn=job_role_arn,
        virtual_cluster_id=virtual_cluster.id, log_group=log_group_name,
        glue_databases=tuple(sorted(database_names.items())),
        data_classification=("${local.maintenance_classification}",),
        snapshot_retention_days="${local.retention.snapshots}",  # type: ignore[arg-type] - a reference
        catalog_name="${local.maintenance_catalog_name}",
        lf_classification_tag=inputs.names["lf_tag_classification"])
    deps = job_deps.target_for_release(job_deps.DEFAULT_RELEASE_LABEL, job_deps.DEFAULT_ARCH)
    return target, RequestOptions(python=deps.interpreter)


def maintenance_schedule_config(inputs: TenantInputs, target, options, key_arn: str, job_role_arn: str,
                                virtual_cluster: EmrVirtualCluster) -> MaintenanceScheduleConfig:
    """The schedule of ``var.maintenance_schedule``, whose input is the request ``deploy-jobs --maintain`` sends
    (``infra.deploy.request.scheduled_maintenance_request``), rendered with the module's references (``target``,
    ``options``: ``module_deploy_target``)."""
    import json

    from infra.deploy.request import SCHEDULER_TARGET, scheduled_maintenance_request, universal_target_input

    request = universal_target_input(scheduled_maintenance_request(target, options))
    text = json.dumps(request)
    if '\\"' in text:  # a reference with quotes would not survive as a template inside the JSON
        raise ValueError("the maintenance schedule's input holds an expression with quotes; use a local")
    schedule = inputs.maintenance_schedule
    return MaintenanceScheduleConfig(
        schedule_name=inputs.names["maintenance_schedule"], role_name=inputs.names["maintenance_scheduler_role"],
        partition=inputs.partition, region=inputs.region, account_id=inputs.account_id,
        virtual_cluster_arn=virtual_cluster.arn, job_role_arn=job_role_arn, kms_key_arn=key_arn,
        target_arn=SCHEDULER_TARGET.format(partition=inputs.partition), request_input=text, tags=inputs.tags,
        enabled="var.maintenance_schedule.enabled", schedule_expression=schedule["schedule_expression"],
        timezone=schedule["timezone"], flexible_window_minutes="var.maintenance_schedule.flexible_window_minutes")


def build(outdir: str) -> App:
    """The app with the tenant stack, ready to ``synth()`` into ``outdir``."""
    app = App(outdir=outdir)
    TenantLakeStack(app)
    return app
