"""Entry point of the embedded emulator: moto's server, with a few documented corrections.

Moto 5.2.5 evaluates a bucket policy on every object request, but without any request context:
a statement's ``Condition`` (``aws:SecureTransport``, ``aws:SourceVpce``, ``aws:PrincipalArn``,
``s3:x-amz-server-side-encryption...``) can never match, and moto then treats the statement as a
match for every caller. Every conditional ``Deny`` in the tenant lake's policy therefore denied
*all* object reads and writes (403), which is neither AWS's behaviour nor moto's documented one.

The correction: bucket policies are stored and returned as usual (tests read them back and assert
every statement), but not evaluated on object requests, i.e. the emulator behaves as documented in
the README: "moto does not enforce bucket policies". Their effect is evaluated by an IAM policy
simulator instead, over the policies read back from the emulator (policies/README.md, the access matrix).

A second correction: moto 5.2.5 calls ``dispose()`` on every version when it deletes a key from a
bucket whose versioning is suspended, but its delete markers have no ``dispose`` method: the request
answered HTTP 500, and terraform's bucket destroy (which suspends versioning first) retried forever. Delete markers get a no-op
``dispose``.

A third correction: moto 5.2.5 stores a bucket's EventBridge notification switch
(``PutBucketNotificationConfiguration`` with ``EventBridgeConfiguration``) but never returns it from
``GetBucketNotificationConfiguration``, so terraform saw ``eventbridge = false`` after every apply and
planned to turn it on again. The stored switch is now returned as AWS returns it (an empty
``<EventBridgeConfiguration/>``); the tenant module needs no ``ignore_changes`` for it.

A fourth correction: moto 5.2.5 keeps a deleted EMR on EKS virtual cluster (state ``TERMINATED``) and
still counts its namespace as taken, so a tenant destroyed and applied again in the same emulator failed
with "A virtual cluster already exists in the given namespace". On AWS a terminated virtual cluster frees
its namespace; here too now.

A fifth correction: ``CreateVpcEndpoint`` is idempotent on its ``ClientToken``, as on AWS.  The AWS provider sends one
token per endpoint and its SDK retries a request whose answer it did not get (a 5xx, a dropped connection)
with the same token; AWS then returns the endpoint it already created, moto 5.2.5 created a second one
(same tags, untracked by Terraform, left behind by ``destroy``).  A token reused for another VPC or service
fails with ``IdempotentParameterMismatch``, as on AWS.

A sixth: ``UpdateWorkGroup`` (Athena) is implemented; moto 5.2.5 answered it HTTP 500 ("has not been
implemented"), and the AWS provider retried that for 15 minutes, holding the state lock. Terraform sends it
for any change of a workgroup, including ``force_destroy`` alone, which is what a workgroup adopted by
import (``infra.terragrunt.adoption``, after an interrupted apply) always differs in. It applies the
description, the state and the ``ConfigurationUpdates`` as AWS documents them (``Remove*`` flags drop a
setting; ``ResultConfigurationUpdates`` change the result configuration); an unknown workgroup is an
``InvalidRequestException``, as on AWS.

A seventh: S3 Inventory configurations. ``DeleteBucketInventoryConfiguration`` (``DELETE /?inventory&id=``)
fell through to ``DeleteBucket`` in moto 5.2.5: terraform destroying an ``aws_s3_bucket_inventory`` deleted
the lake bucket itself when it was empty, and failed with ``BucketNotEmpty`` when it was not. It now
deletes the one configuration (an unknown id answers 404 ``NoSuchConfiguration``, AWS's code, which the
AWS provider's destroy waits for; moto said ``NoSuchInventoryConfig``). Moto also answered
``IncludedObjectVersions: All`` whatever was stored, and ``ListBucketInventoryConfigurations`` gave the
optional fields as ``["Field"]``; both now return what was put.

An eighth: a listing with a delimiter (``ListObjectsV2``/``ListObjects`` with ``Delimiter=/``, how s3a lists a
folder) names a common prefix only when a current object lies under it, as on AWS. Moto 5.2.5 also named
prefixes whose keys are all deleted in a versioned bucket (their latest version a delete marker), so
every folder a job ever deleted stayed a phantom sub-folder for s3a: each run found Spark's deleted
``.spark-staging-*`` folders again, "removed" them (a delete of nothing) and paid the requests, more with
every run.

A ninth, the fifth's twin: ``CreateRouteTable`` is idempotent on its ``ClientToken`` too. The AWS provider sends
one (``terraform-<timestamp>...``, seen in its debug log) and retries with it; moto 5.2.5 ignored it, and once
in five whole test runs on a busy machine the fixture VPC held a second ``tenantlake-private-b`` route table,
untracked by Terraform: the route-table check counted 4, and ``make destroy-all`` could not delete the VPC
(the provider retries ``DeleteVpc`` on ``DependencyViolation`` for many minutes). A retry now gets the table
the first request made, as on AWS; a token reused for another VPC fails with ``IdempotentParameterMismatch``.

A tenth: Lake Formation's grants and tags, as the AWS provider and ``spark_jobs/tables/lf_tags.py`` use them
(``_correct_lake_formation``): ``ListPermissions`` of a grant on an LF-tag or a tag expression (moto 5.2.5
refused it, so terraform could not read back any tag-based grant), ``RevokePermissions`` of a permission not
held (AWS's ``InvalidInputException``, which the provider's destroy waits for), ``GetResourceLFTags`` of an
untagged table (HTTP 500) and ``AddLFTagsToResource`` per key and per column (moto replaced all of a
resource's tags). Moto stores grants and tags; it enforces none of them. And ``GetResourceLFTags`` of a table
answers its columns' tags (``LFTagsOnColumns``, the columns of its Glue table), as AWS does; moto answered the
table's own tags only (``_answer_table_column_tags``).

An eleventh: ``StartQueryExecution`` in a workgroup that enforces its configuration writes its results where the
workgroup says (moto 5.2.5 took the request's ``ResultConfiguration``, or none): the tenant's workgroups enforce
theirs, and which principal's results land where is what the access matrix judges (``_enforce_athena_workgroup_results``).

A twelfth: Glue's ``CreateDatabase`` without ``CreateTableDefaultPermissions`` takes them from the account's Lake
Formation settings in that region (``CreateTableDefaultPermissions`` of ``GetDataLakeSettings``), as AWS does: in an
account that keeps Lake Formation's out-of-the-box defaults (moto starts with them too, ``IAM_ALLOWED_PRINCIPALS``
``ALL`` in both lists) a new database hands every table created in it to ``IAM_ALLOWED_PRINCIPALS``, and that is
what the job's preflight refuses (``spark_jobs/tables/lf_tags.py``). Moto 5.2.5 left the database's defaults empty whatever
the settings said, so a tenant applied before the account's settings looked closed here and open on AWS
(``_databases_take_the_accounts_lake_formation_defaults``). The ``IAM_ALLOWED_PRINCIPALS`` grant that AWS also adds on
such a database (from ``CreateDatabaseDefaultPermissions``) is not emulated.

Two changes for speed, which change no answer: connections are kept alive (werkzeug's development server
closed every connection after one response, so s3a paid a TCP connection and a TLS handshake on both sides
for every request; each request body is now read whole before moto sees it, and Nagle's algorithm is off,
so a kept response is not held for the client's delayed ACK), and the dispatcher's lookup of a request's
backend (a listing of moto's package folder and a match against every backend's URL patterns, for every
request, under a lock) is made once per host. On the maintenance benchmark at 40 daily runs, the whole
benchmark took 45 s against 97 s, and 68 CPU s against 117 (emulator and Spark together).

Three changes for large objects, which change no answer either (``land`` of a 1 GB file, spark_jobs/README.md
"land"): an ``aws-chunked`` body (boto3's default since 1.36: a CRC32 trailer) is decoded in one pass, where
moto 5.2.5 copied everything decoded so far for each chunk (quadratic: decoding 128 MiB took 24 s and
256 MiB 103 s, against 0.7 s and 1.0 s in one pass, on a busy machine; the issue's 1 GB ``put_object`` over 7 minutes); a multipart upload with per-part checksums is completed by copying its parts into the object block by
block, where moto built the whole object twice in memory (2.3 GB for 1 GB); and the server collects garbage after
each request with a body of ``LARGE_BODY_BYTES`` or more, since moto leaves the request's copies of the body in
reference cycles that piled up part after part (1.2 GB during a 1 GB upload). Moto 5.2.5 already answers
``If-None-Match: *`` on ``CompleteMultipartUpload`` as S3 does (412 when the key exists, the upload kept until
aborted); nothing is changed there.

An eleventh, for Step Functions' interpreter: it is on from the start (moto's ``execute_state_machine`` setting).
Moto keeps the state machines of its interpreter in a backend of their own, so switching it on later through
``/moto-api/config`` hid every state machine created before (``StateMachineDoesNotExist`` for an applied tenant's).
Moto 5.2.5 runs a state's service integration (``sns:publish``, ``states:startExecution``, ``sqs:sendMessage``...)
with a boto3 client of ``http://localhost:$MOTO_PORT``, which this HTTPS server does not answer, so every such
state failed with ``States.Runtime`` ("Connection was closed"). Those clients now call this server back on its own
address over TLS, trusting the CA next to its certificate (``ca.pem``, ``infra/local/tls.py``). And moto 5.2.5 sent
a state's ``Parameters`` to the service as written: AWS's integrations take the API's member names capitalised
(``StateMachineArn``, ``Name``, ``Input`` for ``states:startExecution``), which a service whose members are camelCase
(Step Functions' own) refused, so ``states:startExecution`` failed with ``States.Runtime``; the parameters are now
mapped onto the operation's members by the service model first, as AWS (and LocalStack, which moto's interpreter
comes from) do; the answer's members are capitalised back, its timestamps written as ISO 8601 text (moto 5.2.5
failed to write an answer holding a timestamp, such as ``StartDate``, into the state's output). Nothing else about the interpreter changes: it still cannot run the ``emr-containers`` ``.sync``
integration.

A twelfth: ``ValidateStateMachineDefinition``, which the AWS provider calls before it creates or updates a state
machine, is implemented; moto 5.2.5 answered it HTTP 500 ("has not been implemented") and the provider retried
that for as long as its timeout allowed, holding the apply. The definition is parsed with moto's own ASL parser,
the one its interpreter runs: ``OK``, or ``FAIL`` with one diagnostic naming the parser's error (AWS runs more
checks than the parse; the test ``tests/infra/local/test_moto_server.py`` says which this does). So is
``ListStateMachineVersions``, which the provider reads after every create and refresh (moto 5.2.5: HTTP 500 again,
retried until the timeout): the versions moto keeps of the state machine, newest first, as AWS lists them.

A thirteenth: an EventBridge input transformer inserts a list of objects as JSON, as AWS does; moto 5.2.5 wrote
each object of such a list as a quoted string (``"rules": ["{\"name\": ...}"]``), so a rule whose message carries
one (the tenant's ``publish-blocked`` rule, ``modules/alert_rules.py``) delivered something else than AWS would.

A fourteenth: S3 server access logs are delivered in batches, one log object per logged bucket every
``ACCESS_LOG_FLUSH_SECONDS`` holding that interval's records, as AWS consolidates them; moto 5.2.5 put one
object per request (``_deliver_access_logs_in_batches``).

And one addition for the local fixture network: ``CreateVpc`` with the tag ``tenantlake:fixture-vpc-id``
creates the VPC with exactly that id (moto cannot be told a VPC id otherwise), so a tenant file can name
its local VPC by id. The same request again (same CIDR, same tags) answers that VPC: on a busy machine the
AWS provider retried a ``CreateVpc`` whose answer was slow, and the retry failed with
``InvalidVpcID.Duplicate`` although the first had made the VPC (a whole test run's scratch tenants failed so);
another request for the id still fails so.  Nothing else in moto is changed.

Run as ``python -m infra.local.moto_server -H 127.0.0.1 -p PORT [-c CERT -k KEY]`` (same flags as
``python -m moto.server``); ``infra.local.emulator`` does this.
"""
from __future__ import annotations

import sys


ACCESS_LOG_FLUSH_SECONDS = 5.0  # how long S3 server access log records wait to be delivered together


def _deliver_access_logs_in_batches() -> None:
    """Server access logs as AWS delivers them: records collected and written as one log object per source
    bucket every ``ACCESS_LOG_FLUSH_SECONDS`` (AWS: "periodically ... consolidates the records in log files"),
    not one object per request. Moto 5.2.5 put an object (SSE-KMS, versioned, in memory) into the log bucket
    for every request to a logged bucket: thousands per test module, a slower emulator, and a destroy of a
    tenant whose log bucket held them spent minutes emptying it (each pass listing every version, then
    ``BucketNotEmpty`` again from the lake bucket's own deletes)."""
    import threading

    from moto.s3.models import S3Backend

    original = S3Backend.log_incoming_request
    pending: dict[tuple[int, str, str], tuple[S3Backend, list[str]]] = {}
    lock = threading.Lock()

    class _Collect:  # stands in for the backend while moto formats one record: keeps it instead of putting it
        def __init__(self, backend: S3Backend):
            self.backend = backend

        def __getattr__(self, name):
            return getattr(self.backend, name)

        def put_object(self, bucket_name, key_name, value, **_):
            prefix = key_name[:key_name.rfind("/") + 1]
            with lock:
                pending.setdefault((id(self.backend), bucket_name, prefix), (self.backend, []))[1].append(
                    value.decode() if isinstance(value, bytes) else value)

    def log_incoming_request(self, request, bucket_name):
        original(_Collect(self), request, bucket_name)

    def flush() -> None:
        import datetime
        import secrets
        import time

        while True:
            time.sleep(ACCESS_LOG_FLUSH_SECONDS)
            with lock:
                batches = list(pending.items())
                pending.clear()
            for (_, bucket_name, prefix), (backend, records) in batches:
                name = datetime.datetime.now().strftime(f"%Y-%m-%d-%H-%M-%S-{secrets.token_hex(8).upper()}")
                try:
                    backend.put_object(bucket_name, prefix + name, value="\n".join(records) + "\n")
                except Exception:  # noqa: BLE001 - delivery is best effort on AWS too (a bucket gone meanwhile)
                    pass

    S3Backend.log_incoming_request = log_incoming_request
    threading.Thread(target=flush, name="s3-access-log-delivery", daemon=True).start()


def _disable_context_free_bucket_policy_evaluation() -> None:
    from moto.iam.access_control import PermissionResult
    from moto.s3.models import FakeBucket

    def get_permission(self, action: str, resource: str):  # noqa: ARG001 - moto's signature
        return PermissionResult.NEUTRAL

    FakeBucket.get_permission = get_permission


def _give_delete_markers_a_dispose() -> None:
    from moto.s3.models import FakeDeleteMarker

    if not hasattr(FakeDeleteMarker, "dispose"):
        FakeDeleteMarker.dispose = lambda self, garbage=False: None  # holds no buffer to release


def _make_create_vpc_endpoint_idempotent() -> None:
    import threading

    from moto.ec2.exceptions import EC2ClientError
    from moto.ec2.models.vpcs import VPCBackend

    original = VPCBackend.create_vpc_endpoint
    lock = threading.Lock()  # two retries of one request must not both miss the token

    def create_vpc_endpoint(self, vpc_id, service_name, *args, client_token=None, **kwargs):
        if not client_token:
            return original(self, vpc_id, service_name, *args, **kwargs)
        with lock:
            for endpoint in list(self.vpc_end_points.values()):
                if endpoint.client_token == client_token and endpoint.state != "deleted":
                    if (endpoint.vpc_id, endpoint.service_name) != (vpc_id, service_name):
                        raise EC2ClientError("IdempotentParameterMismatch",
                                             f"The client token {client_token} was used for a different request.")
                    return endpoint
            return original(self, vpc_id, service_name, *args, client_token=client_token, **kwargs)

    VPCBackend.create_vpc_endpoint = create_vpc_endpoint


def _make_create_route_table_idempotent() -> None:
    import threading

    from moto.core.responses import ActionResult
    from moto.ec2.exceptions import EC2ClientError
    from moto.ec2.responses.route_tables import RouteTables

    original = RouteTables.create_route_table
    lock = threading.Lock()  # two retries of one request must not both miss the token
    made: dict[tuple[str, str, str], str] = {}  # (account, region, token) -> the route table it created

    def create_route_table(self):
        token = self._get_param("ClientToken")
        if not token:
            return original(self)
        vpc_id = self._get_param("VpcId")
        with lock:
            key = (self.current_account, self.region, token)
            known = self.ec2_backend.route_tables.get(made.get(key, ""))
            if known is not None:
                if known.vpc_id != vpc_id:
                    raise EC2ClientError("IdempotentParameterMismatch",
                                         f"The client token {token} was used for a different request.")
                return ActionResult({"RouteTable": known})
            before = set(self.ec2_backend.route_tables)
            result = original(self)
            created = [rt for rt in self.ec2_backend.route_tables if rt not in before]
            if len(created) == 1:
                made[key] = created[0]
            return result

    RouteTables.create_route_table = create_route_table


FIXTURE_VPC_ID_TAG = "tenantlake:fixture-vpc-id"  # CreateVpc: create the VPC with this id (local fixture network)


def _let_create_vpc_take_a_fixture_id() -> None:
    import re
    import threading

    from moto.ec2.exceptions import EC2ClientError
    from moto.ec2.models import vpcs as vpc_models

    original = vpc_models.VPCBackend.create_vpc
    lock = threading.Lock()  # the id generator is swapped for one call: no other CreateVpc may run meanwhile

    def create_vpc(self, cidr_block, *args, tags=None, **kwargs):
        wanted = next((t["Value"] for t in tags or [] if t.get("Key") == FIXTURE_VPC_ID_TAG), None)
        if wanted is None:
            with lock:
                return original(self, cidr_block, *args, tags=tags, **kwargs)
        if not re.fullmatch(r"vpc-[0-9a-f]{8,17}", wanted):
            raise EC2ClientError("InvalidParameterValue", f"{FIXTURE_VPC_ID_TAG} {wanted!r} is not a VPC id")
        with lock:
            if wanted in self.vpcs:
                existing = self.vpcs[wanted]
                asked = {t.get("Key"): t.get("Value") for t in tags or []}
                if existing.cidr_block == cidr_block and dict(self.tags.get(wanted, {})) == asked:
                    return existing  # the same request again: the provider's retry of a slow answer
                raise EC2ClientError("InvalidVpcID.Duplicate", f"The VPC {wanted} already exists")
            generator = vpc_models.random_vpc_id
            vpc_models.random_vpc_id = lambda: wanted
            try:
                return original(self, cidr_block, *args, tags=tags, **kwargs)
            finally:
                vpc_models.random_vpc_id = generator

    vpc_models.VPCBackend.create_vpc = create_vpc


def _list_only_prefixes_holding_current_objects() -> None:
    from moto.s3.models import FakeDeleteMarker, S3Backend

    original = S3Backend.list_objects

    def list_objects(self, bucket, prefix, delimiter, marker, max_keys):
        keys, folders, truncated, next_marker = original(self, bucket, prefix, delimiter, marker, max_keys)
        if not (delimiter and folders):
            return keys, folders, truncated, next_marker
        start, live = prefix or "", set()
        for name, key in bucket.keys.items():  # the latest version of each key
            if isinstance(key, FakeDeleteMarker) or not name.startswith(start):
                continue
            rest = name[len(start):]
            if delimiter in rest:
                live.add(f"{start}{rest.split(delimiter)[0]}{delimiter}")
        return keys, [folder for folder in folders if folder in live], truncated, next_marker

    S3Backend.list_objects = list_objects


def _report_eventbridge_notifications() -> None:
    import re

    from moto.s3.responses import S3Response

    stored_only = S3Response.get_bucket_notification

    def get_bucket_notification(self):
        status, headers, body = stored_only(self)
        config = self.backend.get_bucket_notification_configuration(self.bucket_name)
        if config is None or config.event_bridge is None or not isinstance(body, str) or \
                "EventBridgeConfiguration" in body:
            return status, headers, body
        element = "<EventBridgeConfiguration></EventBridgeConfiguration>"
        if "</NotificationConfiguration>" in body:
            body = body.replace("</NotificationConfiguration>", element + "</NotificationConfiguration>", 1)
        else:  # the empty, self-closing root element
            body = re.sub(r"<NotificationConfiguration([^>]*)/>", rf"<NotificationConfiguration\1>{element}"
                          r"</NotificationConfiguration>", body, count=1)
        return status, {k: v for k, v in headers.items() if k.lower() != "content-length"}, body

    S3Response.get_bucket_notification = get_bucket_notification


def _free_namespaces_of_terminated_virtual_clusters() -> None:
    from moto.emrcontainers.models import EMRContainersBackend

    counts_terminated = EMRContainersBackend.create_virtual_cluster

    def create_virtual_cluster(self, *args, **kwargs):
        terminated = {cid: vc for cid, vc in self.virtual_clusters.items() if vc.state == "TERMINATED"}
        for cid in terminated:  # hidden from the namespace check only; still listed and described
            del self.virtual_clusters[cid]
        try:
            return counts_terminated(self, *args, **kwargs)
        finally:
            self.virtual_clusters.update(terminated)

    EMRContainersBackend.create_virtual_cluster = create_virtual_cluster


def _merge_updates(target: dict, updates: dict, nested: dict[str, str]) -> None:
    """Apply an Athena ``...Updates`` structure: ``RemoveX: true`` drops ``X``, a key in ``nested`` updates
    the named sub-structure the same way, and any other key sets its value."""
    for key, value in updates.items():
        if key in nested:
            sub = target.setdefault(nested[key], {})
            _merge_updates(sub, value, {})
            if not sub:
                del target[nested[key]]
        elif key.startswith("Remove") and isinstance(value, bool):
            if value:
                target.pop(key[len("Remove"):], None)
        else:
            target[key] = value


def _implement_athena_update_work_group() -> None:
    import json

    from moto.athena.responses import AthenaResponse

    def update_work_group(self):
        name = self._get_param("WorkGroup")
        group = self.athena_backend.work_groups.get(name)
        if group is None:
            return self.error(f"WorkGroup {name} is not found.", 400)
        if self._get_param("Description") is not None:
            group.description = self._get_param("Description")
        if self._get_param("State") is not None:
            group.state = self._get_param("State")
        updates = dict(self._get_param("ConfigurationUpdates") or {})
        engine = updates.pop("EngineVersion", None)
        _merge_updates(group.configuration, updates, {"ResultConfigurationUpdates": "ResultConfiguration"})
        if engine and engine.get("SelectedEngineVersion"):
            selected = engine["SelectedEngineVersion"]
            group.configuration["EngineVersion"] = {
                "SelectedEngineVersion": selected,
                "EffectiveEngineVersion": "Athena engine version 3" if selected == "AUTO" else selected}
        return json.dumps({})

    AthenaResponse.update_work_group = update_work_group


def _correct_bucket_inventory_configurations() -> None:
    from moto.s3 import responses as s3_responses
    from moto.s3.exceptions import MissingInventoryConfig
    from moto.s3.models import S3Backend
    from moto.s3.responses import S3Response

    def delete_bucket_inventory_configuration(self, bucket_name: str, id: str) -> None:  # noqa: A002 - AWS's name
        bucket = self.get_bucket(bucket_name)
        if id not in bucket.inventory_configs:
            raise MissingInventoryConfig()
        del bucket.inventory_configs[id]

    S3Backend.delete_bucket_inventory_configuration = delete_bucket_inventory_configuration
    # AWS answers an unknown inventory id with 404 ``NoSuchConfiguration`` (as for analytics and metrics
    # configurations); moto said ``NoSuchInventoryConfig``, which the AWS provider does not know: its destroy
    # waits for ``NoSuchConfiguration`` after the delete, and failed instead.
    no_such_configuration = (404, {"Content-Type": "application/xml"},
                             '<?xml version="1.0" encoding="UTF-8"?>\n<Error><Code>NoSuchConfiguration</Code>'
                             "<Message>The specified configuration does not exist.</Message></Error>")
    deletes_the_bucket = S3Response._bucket_response_delete

    def _bucket_response_delete(self, bucket_name, querystring):
        if "inventory" not in querystring:
            return deletes_the_bucket(self, bucket_name, querystring)
        self._set_action("BUCKET", "DELETE", querystring)
        self._authenticate_and_authorize_s3_action(bucket_name=bucket_name)
        try:
            self.backend.delete_bucket_inventory_configuration(bucket_name, querystring["id"][0])
        except MissingInventoryConfig:
            return no_such_configuration
        return 204, {}, ""

    S3Response._bucket_response_delete = _bucket_response_delete

    def fields(optional) -> list[str]:  # xmltodict: {"Field": [..]} or {"Field": "Size"} for a single one
        value = optional.get("Field", []) if isinstance(optional, dict) else optional
        return [value] if isinstance(value, str) else list(value or [])

    stores_without_versions = S3Backend.put_bucket_inventory_configuration

    def put_bucket_inventory_configuration(self, bucket_name, inventory_configuration):
        stores_without_versions(self, bucket_name, inventory_configuration)
        config = self.get_bucket(bucket_name).inventory_configs[inventory_configuration["Id"]]
        config.included_object_versions = inventory_configuration.get("IncludedObjectVersions") or "All"
        config.optional_fields = fields(config.optional_fields) if config.optional_fields else None

    S3Backend.put_bucket_inventory_configuration = put_bucket_inventory_configuration

    def with_stored_versions(method):
        def answer(self):
            try:
                status, headers, body = method(self)
            except MissingInventoryConfig:
                return no_such_configuration
            stored = self.backend.get_bucket(self.bucket_name).inventory_configs
            if isinstance(body, str) and stored:
                for config in stored.values():  # each <Id> is followed by moto's fixed <IncludedObjectVersions>
                    body = body.replace(f"<Id>{config.id}</Id><IncludedObjectVersions>All</IncludedObjectVersions>",
                                        f"<Id>{config.id}</Id><IncludedObjectVersions>"
                                        f"{getattr(config, 'included_object_versions', 'All')}</IncludedObjectVersions>")
            return status, {k: v for k, v in headers.items() if k.lower() != "content-length"}, body
        return answer

    S3Response.get_bucket_inventory_configuration = with_stored_versions(S3Response.get_bucket_inventory_configuration)
    S3Response.list_bucket_inventory_configurations = with_stored_versions(
        S3Response.list_bucket_inventory_configurations)
    assert s3_responses  # the module is loaded before the server builds its routes


def _lf_tag_pairs(tags) -> frozenset:
    """LF-tags (``[{TagKey, TagValues}, ...]``) as a comparable set; keys compare case-insensitively, as on AWS."""
    return frozenset((str(t.get("TagKey", "")).lower(), tuple(sorted(t.get("TagValues") or ()))) for t in tags or ())


def _lf_resource_matches(stored: dict, wanted: dict) -> bool:
    """Whether a stored grant's resource is the ``LFTag`` or ``LFTagPolicy`` resource ``wanted`` names."""
    if "LFTag" in wanted:
        return "LFTag" in stored and (str(stored["LFTag"].get("TagKey", "")).lower()
                                      == str(wanted["LFTag"].get("TagKey", "")).lower())
    policy, mine = wanted["LFTagPolicy"], stored.get("LFTagPolicy")
    return (mine is not None and mine.get("ResourceType") == policy.get("ResourceType")
            and _lf_tag_pairs(mine.get("Expression")) == _lf_tag_pairs(policy.get("Expression")))


def _correct_lake_formation() -> None:
    """Lake Formation calls the tenant module and ``spark_jobs.tables.lf_tags`` make, as AWS answers them.

    * ``ListPermissions`` of an ``LFTag`` or ``LFTagPolicy`` resource (how the AWS provider reads back a grant on
      a tag or a tag expression) answered ``InvalidInputException`` ("Resource must have either the catalog, table
      or database field populated"): it now lists the grants on that tag key, or on that expression (keys and
      values compared as sets), for the principal when one is given.
    * ``GetResourceLFTags`` of a database or table that never had a tag answered HTTP 500 (a ``KeyError``): it
      answers no tags.
    * ``AddLFTagsToResource`` replaced every tag of the resource with the ones sent, and gave every column of one
      call the same stored list (removing a tag from one column removed it from all): it now sets the sent keys'
      values and keeps the resource's other keys (AWS: one value per key on a resource), one list per column.
      ``RemoveLFTagsFromResource`` removes the sent keys whatever ``CatalogId`` the stored tag carries.
    * ``RevokePermissions`` of a permission the grantee does not hold answered success; AWS answers
      ``InvalidInputException`` "No permissions revoked. Grantee has no ...", which the AWS provider's destroy
      waits for after its revoke (it retried the revoke until its timeout, then failed "empty retryable error")."""
    import json

    from moto.lakeformation.exceptions import InvalidInput
    from moto.lakeformation.models import LakeFormationBackend, Permission
    from moto.lakeformation.responses import LakeFormationResponse

    lists_permissions = LakeFormationResponse.list_permissions

    def list_permissions(self):
        resource = self._get_param("Resource") or {}
        if not ({"LFTag", "LFTagPolicy"} & set(resource)):
            return lists_permissions(self)
        catalog_id = self._get_param("CatalogId") or self.current_account
        principal = self._get_param("Principal")
        grants = self.lakeformation_backend.grants.get(catalog_id)
        found = [grant.to_external_form() for grant in (grants.permissions if grants else ())
                 if (principal is None or grant.principal == principal) and _lf_resource_matches(grant.resource, resource)]
        return json.dumps({"PrincipalResourcePermissions": found})

    def stores(self, catalog_id: str, resource: dict) -> list[tuple[dict, tuple]]:
        """(tag store, key) of each database, table or column ``resource`` names."""
        if "Database" in resource:
            db = resource["Database"]
            return [(self.lf_database_tags, (db.get("CatalogId", self.account_id), db["Name"]))]
        if "Table" in resource:
            table = resource["Table"]
            return [(self.lf_table_tags, (table.get("CatalogId", self.account_id), table["DatabaseName"], table["Name"]))]
        if "TableWithColumns" in resource:
            table = resource["TableWithColumns"]
            base = (table.get("CatalogId", self.account_id), table["DatabaseName"], table["Name"])
            return [(self.lf_columns_tags, (*base, column)) for column in table.get("ColumnNames") or ()]
        return []

    def add_lf_tags_to_resource(self, catalog_id, resource, tags):
        known = self.list_lf_tags(catalog_id)
        failures = [{"LFTag": tag, "Error": {"ErrorCode": "EntityNotFoundException",
                                             "ErrorMessage": "Tag or tag value does not exist."}}
                    for tag in tags if tag["TagKey"] not in known
                    or not set(tag.get("TagValues") or ()) <= set(known[tag["TagKey"]])]
        if failures:
            return failures
        for store, key in stores(self, catalog_id, resource):
            sent = {tag["TagKey"].lower() for tag in tags}
            kept = [dict(tag) for tag in store.get(key, ()) if tag["TagKey"].lower() not in sent]
            store[key] = kept + [{"CatalogId": catalog_id, **dict(tag)} for tag in tags]
        return []

    def get_resource_lf_tags(self, catalog_id, resource):
        levels: dict[str, list] = {"Database": [], "Table": [], "TableWithColumns": []}
        for level in levels:
            if level in resource:
                for store, key in stores(self, catalog_id, {level: resource[level]}):
                    if level == "TableWithColumns":
                        if store.get(key):
                            levels[level].append({"Name": key[-1], "LFTags": store[key]})
                    else:
                        levels[level] = list(store.get(key, ()))
        return levels["Database"], levels["Table"], levels["TableWithColumns"]

    def remove_lf_tags_from_resource(self, catalog_id, resource, tags):
        removed = {tag["TagKey"].lower() for tag in tags}
        for store, key in stores(self, catalog_id, resource):
            store[key] = [tag for tag in store.get(key, ()) if tag["TagKey"].lower() not in removed]

    def revoke_permissions(self, catalog_id, principal, resource, permissions_to_revoke,
                           permissions_with_grant_options_to_revoke):
        grants = self.grants.get(catalog_id)
        held = [grant for grant in (grants.permissions if grants else ()) if grant.principal == principal and (
            _lf_resource_matches(grant.resource, resource) if {"LFTag", "LFTagPolicy"} & set(resource)
            else grant.resource == resource)]
        wanted = set(permissions_to_revoke or ()) | set(permissions_with_grant_options_to_revoke or ())
        if not any(wanted & set(grant.permissions) | wanted & set(grant.permissions_with_grant_options) for grant in held):
            raise InvalidInput(f"No permissions revoked. Grantee has no {', '.join(sorted(wanted))} permission on "
                               "the resource")
        for grant in held:
            grants.permissions.discard(grant)
            grant.diff(Permission(principal, resource, list(permissions_to_revoke or ()),
                                  list(permissions_with_grant_options_to_revoke or ())))
            if not grant.is_empty():
                grants.permissions.add(grant)

    LakeFormationResponse.list_permissions = list_permissions
    LakeFormationBackend.revoke_permissions = revoke_permissions
    LakeFormationBackend.add_lf_tags_to_resource = add_lf_tags_to_resource
    LakeFormationBackend.get_resource_lf_tags = get_resource_lf_tags
    LakeFormationBackend.remove_lf_tags_from_resource = remove_lf_tags_from_resource


def _answer_table_column_tags() -> None:
    """``GetResourceLFTags`` of a ``Table`` answers the tags of its columns too, as on AWS (``LFTagsOnColumns``: one
    entry per column of the Glue table that carries a tag); moto 5.2.5 answered the table's own tags only, so a
    table's column tags could be read back one named column at a time (``TableWithColumns``) and never by asking for
    the table. The columns are the Glue table's (``StorageDescriptor.Columns``); a table Glue does not hold answers
    as before."""
    from moto.glue.models import glue_backends
    from moto.lakeformation.models import LakeFormationBackend

    answers = LakeFormationBackend.get_resource_lf_tags

    def get_resource_lf_tags(self, catalog_id, resource):
        database_tags, table_tags, column_tags = answers(self, catalog_id, resource)
        if "Table" in resource and "TableWithColumns" not in resource:
            table = resource["Table"]
            try:
                glue_table = glue_backends[self.account_id][self.region_name].get_table(
                    table["DatabaseName"], table["Name"]).as_dict()
            except Exception:  # noqa: BLE001 - no such database or table in Glue: the table's own tags only
                return database_tags, table_tags, column_tags
            names = [c["Name"] for c in (glue_table.get("StorageDescriptor") or {}).get("Columns") or ()]
            if names:
                _, _, column_tags = answers(self, catalog_id, {"TableWithColumns": {
                    **{k: v for k, v in table.items() if k != "TableWildcard"}, "ColumnNames": names}})
        return database_tags, table_tags, column_tags

    LakeFormationBackend.get_resource_lf_tags = get_resource_lf_tags


def _databases_take_the_accounts_lake_formation_defaults() -> None:
    """``CreateDatabase`` without ``CreateTableDefaultPermissions`` gets the account's (its Lake Formation settings'
    ``CreateTableDefaultPermissions`` in the region, for the database's catalog), as on AWS; given ones (an empty list
    too) are kept."""
    import copy

    from moto.glue.models import GlueBackend
    from moto.lakeformation.models import lakeformation_backends

    creates = GlueBackend.create_database

    def create_database(self, database_name, database_input, tags=None):
        if "CreateTableDefaultPermissions" not in database_input:
            catalog_id = database_input.get("CatalogId") or self.account_id
            settings = lakeformation_backends[self.account_id][self.region_name].get_data_lake_settings(catalog_id)
            defaults = settings.get("CreateTableDefaultPermissions")
            if defaults:
                database_input = {**database_input, "CreateTableDefaultPermissions": copy.deepcopy(defaults)}
        return creates(self, database_name, database_input, tags)

    GlueBackend.create_database = create_database


def _enforce_athena_workgroup_results() -> None:
    """``StartQueryExecution`` in a workgroup that enforces its configuration (``EnforceWorkGroupConfiguration``,
    AWS's default and the tenant module's) writes its results where the workgroup says, whatever the request's
    ``ResultConfiguration`` names, as on AWS; moto 5.2.5 took the request's (or none). A workgroup that does not
    enforce fills in only what the request leaves out."""
    import copy

    from moto.athena.models import AthenaBackend

    starts = AthenaBackend.start_query_execution

    def start_query_execution(self, query, context, config, workgroup, execution_parameters):
        group = self.work_groups.get(workgroup) if workgroup else None
        enforced = (group.configuration or {}).get("ResultConfiguration") if group is not None else None
        if enforced:
            if group.configuration.get("EnforceWorkGroupConfiguration", True):
                config = copy.deepcopy(enforced)
            else:
                config = {**copy.deepcopy(enforced), **(config or {})}
        return starts(self, query, context, config, workgroup, execution_parameters)

    AthenaBackend.start_query_execution = start_query_execution


def _cache_backend_lookups() -> None:
    """Moto 5.2.5 lists its own package folder (``os.listdir`` and an ``isdir`` per entry, about 200) for every
    request it routes, under the dispatcher's lock, then matches the host against every backend's URL patterns:
    about a fifth of the server's CPU on s3a traffic. Neither the folder nor the patterns change while it
    runs, so the module list is read once and each host's backend is looked up once."""
    from moto import backends
    from moto.moto_server.werkzeug_app import DomainDispatcherApplication

    modules = tuple(backends.list_of_moto_modules())
    backends.list_of_moto_modules = lambda: modules
    looks_up = DomainDispatcherApplication.get_backend_for_host
    found: dict[str | None, object] = {}
    missing = object()  # a backend may be None

    def get_backend_for_host(self, host):
        backend = found.get(host, missing)
        if backend is missing:
            if len(found) > 4096:  # hosts come from clients: keep the table bounded
                found.clear()
            backend = found[host] = looks_up(self, host)
        return backend

    DomainDispatcherApplication.get_backend_for_host = get_backend_for_host


def _decode_aws_chunked_bodies_in_one_pass() -> None:
    """Moto 5.2.5 decodes an ``aws-chunked`` body (what boto3 sends since 1.36 with its default CRC32 checksum:
    ``x-amz-content-sha256: STREAMING-UNSIGNED-PAYLOAD-TRAILER``) by appending each chunk to a ``bytes`` object,
    copying everything decoded so far for every chunk: quadratic in the body's size. A 64 MiB part took 4.2 s
    against 1.6 s without the checksum (0.8 s now); issue 42 saw a 1 GB ``put_object`` take over 7 minutes. The chunks are now
    joined once; the decoded body is the same."""
    import io

    from moto.s3.responses import S3Response

    def _handle_encoded_body(self, body):
        if not body:
            return b""
        stream = io.BytesIO(body) if isinstance(body, (bytes, bytearray)) else body
        pieces = []
        size = int(stream.readline().strip(), 16)  # each chunk: '<hex size>\r\n<data>\r\n'; the last is size 0
        while size > 0:
            pieces.append(stream.read(size))
            stream.readline()
            size = int(stream.readline().strip(), 16)
        return b"".join(pieces)  # the trailer (x-amz-checksum-...) is left unread, as moto leaves it

    S3Response._handle_encoded_body = _handle_encoded_body


STREAM_BLOCK = 16 * 1024 * 1024  # a completed multipart upload is copied into its object this much at a time


def _stream_completed_multipart_uploads() -> None:
    """Moto 5.2.5 completes a multipart upload by concatenating every part into one ``bytearray`` and then
    copying that into ``bytes``: twice the object in memory at once (a 1 GB upload took the emulator to 2.3 GB),
    before writing it into the new object's buffer, which moto spills to a temporary file. For an upload whose
    checksum is per part (``COMPOSITE``, the type AWS gives an upload that names an algorithm, e.g. ``land``'s
    CRC32), the parts are validated exactly as moto does (part order, ETags, 5 MiB minimum but for the last)
    and then copied into the object's buffer one block at a time; ETag, checksums and size are moto's. An upload
    with a full-object checksum (no algorithm named: moto then computes CRC64NVME over the whole object, which
    it builds in memory anyway) completes as in stock moto."""
    import codecs
    import tempfile

    from moto.s3 import models as s3_models
    from moto.s3.exceptions import EntityTooSmall, InvalidPart, MalformedXML
    from moto.s3.models import FakeKey, FakeMultipart, MultipartChecksumBuilder
    from moto.utilities.utils import md5_hash

    class CompletedParts:
        """The value of a completed upload: its parts' buffers in order, copied into the object's buffer block by
        block. They are taken from the parts, which moto disposes of (closes) as soon as the upload completes."""

        def __init__(self, parts):
            self.size = sum(part.contentsize for part in parts)
            self.buffers = []
            for part in parts:
                with part.lock:
                    self.buffers.append(part._value_buffer)
                    part._value_buffer = tempfile.SpooledTemporaryFile()  # empty: what moto's dispose closes

        def __len__(self) -> int:
            return self.size

    concatenates = FakeMultipart.complete

    def complete(self, body):
        checksums = MultipartChecksumBuilder(self.metadata.get("x-amz-checksum-algorithm"),
                                             self.metadata.get("x-amz-checksum-type"))
        if checksums.checksum_type != "COMPOSITE":
            return concatenates(self, body)
        decode_hex = codecs.getdecoder("hex_codec")
        parts, md5s, last = [], bytearray(), None
        for number, etag in body:
            part = self.parts.get(number)
            if part is None or part.etag.replace('"', "") != etag.replace('"', ""):
                raise InvalidPart()
            if last is not None and last.contentsize < s3_models.S3_UPLOAD_PART_MIN_SIZE:
                raise EntityTooSmall()
            md5s.extend(decode_hex(part.etag.replace('"', ""))[0])
            checksums.addPart(part.value)  # COMPOSITE: the checksum of this part only
            parts.append(part)
            last = part
        if not parts:
            raise MalformedXML()
        full_etag = md5_hash()
        full_etag.update(bytes(md5s))
        return CompletedParts(parts), f"{full_etag.hexdigest()}-{len(parts)}", checksums.build()

    FakeMultipart.complete = complete
    stores_bytes = FakeKey.value.fset

    def set_value(self, new_value) -> None:
        if not isinstance(new_value, CompletedParts):
            return stores_bytes(self, new_value)
        self._value_buffer.seek(0)
        self._value_buffer.truncate()
        for buffer in new_value.buffers:
            buffer.seek(0)
            while block := buffer.read(STREAM_BLOCK):
                self._value_buffer.write(block)
            buffer.close()
        self.contentsize = new_value.size
        return None

    FakeKey.value = property(FakeKey.value.fget, set_value)


# A kept-alive connection that sends nothing for this long is closed by the server. Every client here reconnects
# on its own (botocore and the AWS SDKs check or retry an idle connection).
IDLE_TIMEOUT_S = 120


# After a request with a body this large, the server collects garbage at once: moto 5.2.5 leaves the request's
# copies of the body in reference cycles, which only Python's cyclic collector frees, and a full collection came
# rarely enough that a 1 GB multipart upload's 64 MiB parts piled up to 1.2 GB before it ran.
LARGE_BODY_BYTES = 8 * 1024 * 1024


# The AWS SDK for Go (terraform's AWS provider) gets a connection per request, as from stock moto: a kept-alive
# connection once failed its read of an answer on CI, cause not found (infra/local/README.md).
GO_SDK = "aws-sdk-go"


class _NoDrain:
    """Stands in for werkzeug's ``selectors`` module: the drain after each response (a 10 ms ``select`` on the
    socket, then a read of whatever came) would read the next request of a kept-alive connection. Every
    request body is read whole before the application runs (``_keep_connections_alive``), so nothing is left
    to drain."""

    EVENT_READ = 1

    class DefaultSelector:
        def register(self, *args, **kwargs) -> None:
            pass

        def select(self, timeout=None) -> list:
            return []

        def close(self) -> None:
            pass


def _keep_connections_alive() -> None:
    """Werkzeug's development server (moto's) closes the connection after every response, so every request
    cost a TCP connection and a TLS handshake on both sides (the server's in its accepting thread, one at a
    time), and s3a makes dozens of requests for each file it commits. Connections now stay open (HTTP/1.1
    keep-alive) unless the client asks to close or is the AWS SDK for Go (``GO_SDK``): each request's body is
    read whole before moto sees it, so the next request starts where this one ended, and every response
    carries its length (``Content-Length``, or chunked, as werkzeug already sends it). A connection idle for
    ``IDLE_TIMEOUT_S`` is closed."""
    import gc
    import io

    import werkzeug.serving
    from moto import server
    from moto.moto_server.werkzeug_app import MotoRequestHandler
    from werkzeug.serving import DechunkedInput

    class KeepAliveRequestHandler(MotoRequestHandler):
        protocol_version = "HTTP/1.1"
        # http.server sends the status line, the headers and the body in separate writes: on a kept-alive
        # connection Nagle's algorithm held each small write for the client's delayed ACK (about 40 ms).
        disable_nagle_algorithm = True
        timeout = IDLE_TIMEOUT_S

        def make_environ(self):
            if GO_SDK in self.headers.get("User-Agent", ""):
                self.close_connection = True  # GO_SDK: this response closes the connection
            environ = super().make_environ()
            stream = environ["wsgi.input"]
            if isinstance(stream, DechunkedInput):
                body = stream.read()
            else:
                try:
                    length = int(environ.get("CONTENT_LENGTH") or 0)
                except ValueError:  # where this request ends is unknown: the connection ends with it
                    self.close_connection = True
                    return environ
                body = self.rfile.read(length) if length > 0 else b""
            environ["wsgi.input"] = io.BytesIO(body)
            self.large_body = len(body) >= LARGE_BODY_BYTES
            return environ

        def handle_one_request(self) -> None:
            self.large_body = False
            super().handle_one_request()
            if self.large_body:  # LARGE_BODY_BYTES: free the copies of its body that moto left in reference cycles
                gc.collect()

        def send_error(self, code, message=None, explain=None) -> None:
            # http.server answers a request it could not parse (a header line too long, too many headers)
            # before reading its body, which would then be read as the next request: the connection ends.
            self.close_connection = True
            super().send_error(code, message, explain)

        def send_header(self, keyword: str, value: str) -> None:
            # Werkzeug's unconditional close is sent only when the connection closes anyway: the client asked
            # (parse_request read its Connection header), is the Go SDK, the request's length was unreadable,
            # or the request could not be parsed (send_error).
            if keyword.lower() == "connection" and value.lower() == "close" and not self.close_connection:
                return
            super().send_header(keyword, value)

    werkzeug.serving.selectors = _NoDrain
    server.MotoRequestHandler = KeepAliveRequestHandler


def _insert_lists_as_json_in_input_transformers() -> None:
    import json

    from moto.events.utils import EventTemplateParser

    original = EventTemplateParser._stringify

    def _stringify(result):
        return json.dumps(result) if isinstance(result, list) else original(result)

    EventTemplateParser._stringify = staticmethod(_stringify)


def _run_state_machines_from_the_start() -> None:
    from moto.core.config import default_user_config

    default_user_config.setdefault("stepfunctions", {})["execute_state_machine"] = True


def _call_state_machine_integrations_back_over_tls(argv: list[str]) -> None:
    import argparse
    from pathlib import Path

    parser = argparse.ArgumentParser(add_help=False)
    parser.add_argument("-H", "--host", default="127.0.0.1")
    parser.add_argument("-p", "--port", default="5000")
    parser.add_argument("-c", "--ssl-cert", default="")
    options, _ = parser.parse_known_args(argv)
    if not options.ssl_cert:
        return  # plain HTTP: moto's own http://localhost:$MOTO_PORT reaches this server
    import boto3
    from botocore.config import Config
    from moto.stepfunctions.parser.asl.utils import boto_client

    endpoint = f"https://{options.host}:{options.port}"
    ca_bundle = str(Path(options.ssl_cert).with_name("ca.pem"))
    original = boto_client.boto_client_for

    def boto_client_for(region: str, service: str, state_credentials=None):
        if boto_client.botocore_stubber.enabled:  # in-process mock: moto's own way
            return original(region, service, state_credentials)
        timeout = boto_client.TimeoutSeconds.DEFAULT_TIMEOUT_SECONDS
        return boto3.client(service_name=service, region_name=region, endpoint_url=endpoint, verify=ca_bundle,
                            aws_access_key_id="ak", aws_secret_access_key="sk",  # pragma: allowlist secret
                            config=Config(parameter_validation=False, connect_timeout=timeout, read_timeout=timeout,
                                          retries={"max_attempts": 0, "total_max_attempts": 1}))

    boto_client.boto_client_for = boto_client_for
    for module in list(sys.modules.values()):  # modules that imported the function by name already
        if getattr(module, "boto_client_for", None) is original:
            module.boto_client_for = boto_client_for


def _map_state_machine_task_parameters_onto_the_api() -> None:
    import botocore.session
    from moto.stepfunctions.parser.asl.component.state.exec.state_task.service import state_task_service
    from moto.stepfunctions.parser.utils import camel_to_snake_case

    models: dict[str, object] = {}

    def _model(service: str):
        if service not in models:
            try:
                models[service] = botocore.session.get_session().get_service_model(service)
            except Exception:  # noqa: BLE001 - a service botocore does not know: leave everything as written
                models[service] = None
        return models[service]

    def _operation(model, action: str) -> str | None:
        return next((name for name in getattr(model, "operation_names", ()) if camel_to_snake_case(name) == action),
                    None)

    def _normalise_parameters(self, parameters: dict, boto_service_name: str | None = None,
                              service_action_name: str | None = None) -> None:
        model = _model(self._get_boto_service_name(boto_service_name))
        operation = _operation(model, self._get_boto_service_action(service_action_name))
        if operation is not None and model.operation_model(operation).input_shape is not None:
            self._to_boto_request(parameters, model.operation_model(operation).input_shape)

    def _normalise_response(self, response, boto_service_name: str | None = None,
                            service_action_name: str | None = None) -> None:
        if not isinstance(response, dict):
            return
        _dates_as_text(response)
        model = _model(self._get_boto_service_name(boto_service_name))
        operation = _operation(model, self._get_boto_service_action(service_action_name))
        if operation is not None and model.operation_model(operation).output_shape is not None:
            self._from_boto_response(response, model.operation_model(operation).output_shape)

    state_task_service.StateTaskService._normalise_parameters = _normalise_parameters
    state_task_service.StateTaskService._normalise_response = _normalise_response


def _dates_as_text(value):
    import datetime

    if isinstance(value, dict):
        for key, item in value.items():
            value[key] = _dates_as_text(item)
    elif isinstance(value, list):
        value[:] = [_dates_as_text(item) for item in value]
    elif isinstance(value, datetime.datetime):
        return value.isoformat()
    return value


def _implement_state_machine_validation_and_versions() -> None:
    import json

    from moto.core.responses import ActionResult
    from moto.stepfunctions.parser.asl.parse.asl_parser import AmazonStateLanguageParser
    from moto.stepfunctions.responses import StepFunctionResponse

    def validate_state_machine_definition(self) -> ActionResult:
        definition = self._get_param("definition")
        try:
            json.loads(definition)
            AmazonStateLanguageParser.parse(definition)
        except Exception as exc:  # noqa: BLE001 - any parse error is the definition's
            message = (str(exc).strip().splitlines() or [type(exc).__name__])[0][:500]
            return ActionResult({"result": "FAIL", "truncated": False, "diagnostics": [
                {"severity": "ERROR", "code": "SCHEMA_VALIDATION_FAILED", "message": message}]})
        return ActionResult({"result": "OK", "diagnostics": [], "truncated": False})

    def list_state_machine_versions(self) -> ActionResult:
        machine = self.stepfunction_backend.describe_state_machine(self._get_param("stateMachineArn"))
        versions = sorted(getattr(machine, "versions", {}).values(), key=lambda v: v.version, reverse=True)
        return ActionResult({"stateMachineVersions": [
            {"stateMachineVersionArn": v.arn, "creationDate": v.creation_date} for v in versions]})

    StepFunctionResponse.validate_state_machine_definition = validate_state_machine_definition
    StepFunctionResponse.list_state_machine_versions = list_state_machine_versions


def main(argv: list[str] | None = None) -> None:
    _disable_context_free_bucket_policy_evaluation()
    _deliver_access_logs_in_batches()
    _give_delete_markers_a_dispose()
    _make_create_vpc_endpoint_idempotent()
    _make_create_route_table_idempotent()
    _let_create_vpc_take_a_fixture_id()
    _report_eventbridge_notifications()
    _free_namespaces_of_terminated_virtual_clusters()
    _implement_athena_update_work_group()
    _correct_bucket_inventory_configurations()
    _list_only_prefixes_holding_current_objects()
    _correct_lake_formation()
    _answer_table_column_tags()
    _databases_take_the_accounts_lake_formation_defaults()
    _enforce_athena_workgroup_results()
    _cache_backend_lookups()
    _decode_aws_chunked_bodies_in_one_pass()
    _stream_completed_multipart_uploads()
    _keep_connections_alive()
    argv = argv if argv is not None else sys.argv[1:]
    _run_state_machines_from_the_start()
    _insert_lists_as_json_in_input_transformers()
    _call_state_machine_integrations_back_over_tls(argv)
    _map_state_machine_task_parameters_onto_the_api()
    _implement_state_machine_validation_and_versions()
    from moto.server import main as moto_main

    moto_main(argv)


if __name__ == "__main__":
    main()
