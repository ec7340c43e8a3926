"""infra/local/moto_server.py: the emulator's corrections to moto, each against the session's emulator, and
pinned against stock moto so that a moto upgrade that fixes one shows up here."""
from __future__ import annotations

import uuid

import boto3
import pytest
from botocore.exceptions import ClientError

from infra.local.moto_server import FIXTURE_VPC_ID_TAG

pytestmark = pytest.mark.integration
REGION = "us-east-1"


def _endpoint_request(ec2, vpc_id: str, subnet_id: str, token: str, service: str = "kms") -> dict:
    return dict(VpcId=vpc_id, ServiceName=f"com.amazonaws.{REGION}.{service}", VpcEndpointType="Interface",
                SubnetIds=[subnet_id], ClientToken=token,
                TagSpecifications=[{"ResourceType": "vpc-endpoint", "Tags": [{"Key": "tenant", "Value": "retried"}]}])


def _network(ec2) -> tuple[str, str]:
    vpc = ec2.create_vpc(CidrBlock="10.99.0.0/16")["Vpc"]["VpcId"]
    subnet = ec2.create_subnet(VpcId=vpc, CidrBlock="10.99.1.0/24", AvailabilityZone=f"{REGION}a")["Subnet"]["SubnetId"]
    return vpc, subnet


def test_a_retried_create_vpc_endpoint_returns_the_endpoint_it_created(boto_session):
    """What the AWS provider's SDK does after a 5xx or a dropped connection: the same request, same ClientToken."""
    ec2 = boto_session("ec2", REGION)
    vpc, subnet = _network(ec2)
    token = uuid.uuid4().hex
    first = ec2.create_vpc_endpoint(**_endpoint_request(ec2, vpc, subnet, token))["VpcEndpoint"]["VpcEndpointId"]
    retried = ec2.create_vpc_endpoint(**_endpoint_request(ec2, vpc, subnet, token))["VpcEndpoint"]["VpcEndpointId"]
    assert retried == first
    live = [e["VpcEndpointId"] for e in ec2.describe_vpc_endpoints(
        Filters=[{"Name": "vpc-id", "Values": [vpc]}])["VpcEndpoints"] if e["State"] != "deleted"]
    assert live == [first]
    # A new token is a new endpoint; a token reused for another service is refused, as on AWS.
    other = ec2.create_vpc_endpoint(**_endpoint_request(ec2, vpc, subnet, uuid.uuid4().hex, "sts"))
    assert other["VpcEndpoint"]["VpcEndpointId"] != first
    with pytest.raises(ClientError, match="IdempotentParameterMismatch"):
        ec2.create_vpc_endpoint(**_endpoint_request(ec2, vpc, subnet, token, "logs"))


def test_stock_moto_creates_a_second_endpoint_on_a_retry():
    """Why the correction exists (moto 5.2.5 stores the token and ignores it).  If this fails, moto honours
    ClientToken itself and the correction in infra/local/moto_server.py can go."""
    from moto import mock_aws

    with mock_aws():
        ec2 = boto3.client("ec2", region_name=REGION)
        vpc, subnet = _network(ec2)
        for _ in range(2):
            ec2.create_vpc_endpoint(**_endpoint_request(ec2, vpc, subnet, "same-token"))
        assert len(ec2.describe_vpc_endpoints()["VpcEndpoints"]) == 2


def _route_table_request(vpc_id: str, token: str) -> dict:
    return dict(VpcId=vpc_id, ClientToken=token,
                TagSpecifications=[{"ResourceType": "route-table", "Tags": [{"Key": "Name", "Value": "retried"}]}])


def test_a_retried_create_route_table_returns_the_table_it_created(boto_session):
    """The AWS provider sends a ClientToken with CreateRouteTable and retries with it; a second table would be
    untracked by Terraform and keep the VPC from being deleted."""
    ec2 = boto_session("ec2", REGION)
    vpc, _ = _network(ec2)
    token = uuid.uuid4().hex
    first = ec2.create_route_table(**_route_table_request(vpc, token))["RouteTable"]["RouteTableId"]
    retried = ec2.create_route_table(**_route_table_request(vpc, token))["RouteTable"]
    assert retried["RouteTableId"] == first and retried["VpcId"] == vpc
    tables = ec2.describe_route_tables(Filters=[{"Name": "vpc-id", "Values": [vpc]}])["RouteTables"]
    assert sorted(t["RouteTableId"] for t in tables if not any(a.get("Main") for a in t.get("Associations", []))) \
        == [first]
    # A new token is a new table; a token reused for another VPC is refused, as on AWS.
    assert ec2.create_route_table(**_route_table_request(vpc, uuid.uuid4().hex))["RouteTable"]["RouteTableId"] != first
    other_vpc, _ = _network(ec2)
    with pytest.raises(ClientError, match="IdempotentParameterMismatch"):
        ec2.create_route_table(**_route_table_request(other_vpc, token))
    # A table deleted since is not returned again: the token makes a new one.
    ec2.delete_route_table(RouteTableId=first)
    assert ec2.create_route_table(**_route_table_request(vpc, token))["RouteTable"]["RouteTableId"] != first


def test_stock_moto_creates_a_second_route_table_on_a_retry():
    """Why the correction exists (moto 5.2.5 ignores the token). If this fails, moto honours it itself."""
    from moto import mock_aws

    with mock_aws():
        ec2 = boto3.client("ec2", region_name=REGION)
        vpc, _ = _network(ec2)
        for _ in range(2):
            ec2.create_route_table(**_route_table_request(vpc, "same-token"))
        assert len(ec2.describe_route_tables(Filters=[{"Name": "vpc-id", "Values": [vpc]}])["RouteTables"]) == 3


def test_create_vpc_takes_the_fixture_id_from_its_tag(boto_session):
    ec2 = boto_session("ec2", REGION)
    wanted = "vpc-0" + uuid.uuid4().hex[:16]
    tags = [{"ResourceType": "vpc", "Tags": [{"Key": FIXTURE_VPC_ID_TAG, "Value": wanted}]}]
    vpc = ec2.create_vpc(CidrBlock="10.98.0.0/16", TagSpecifications=tags)["Vpc"]
    assert vpc["VpcId"] == wanted
    assert ec2.describe_vpcs(VpcIds=[wanted])["Vpcs"][0]["CidrBlock"] == "10.98.0.0/16"
    with pytest.raises(ClientError, match="already exists"):
        ec2.create_vpc(CidrBlock="10.97.0.0/16", TagSpecifications=tags)
    named = [{"ResourceType": "vpc", "Tags": [*tags[0]["Tags"], {"Key": "Name", "Value": "other"}]}]
    with pytest.raises(ClientError, match="already exists"):
        ec2.create_vpc(CidrBlock="10.98.0.0/16", TagSpecifications=named)
    # The same request again (the provider's retry of a slow answer): the VPC the first one made, still one.
    assert ec2.create_vpc(CidrBlock="10.98.0.0/16", TagSpecifications=tags)["Vpc"]["VpcId"] == wanted
    assert len(ec2.describe_vpcs(Filters=[{"Name": f"tag:{FIXTURE_VPC_ID_TAG}", "Values": [wanted]}])["Vpcs"]) == 1
    assert ec2.create_vpc(CidrBlock="10.96.0.0/16")["Vpc"]["VpcId"] != wanted  # untagged: moto's own ids
    bad = [{"ResourceType": "vpc", "Tags": [{"Key": FIXTURE_VPC_ID_TAG, "Value": "subnet-0123"}]}]
    with pytest.raises(ClientError, match="is not a VPC id"):
        ec2.create_vpc(CidrBlock="10.95.0.0/16", TagSpecifications=bad)


def _workgroup_config(cutoff: int) -> dict:
    return {"EnforceWorkGroupConfiguration": True, "BytesScannedCutoffPerQuery": cutoff,
            "ResultConfiguration": {"OutputLocation": "s3://wg-bucket/athena/",
                                    "EncryptionConfiguration": {"EncryptionOption": "SSE_S3"}}}


def test_update_work_group_applies_athena_configuration_updates(boto_session):
    athena = boto_session("athena", REGION)
    name = f"wg-{uuid.uuid4().hex[:8]}"
    athena.create_work_group(Name=name, Configuration=_workgroup_config(10 * 1024 ** 3), Description="before",
                             Tags=[{"Key": "tenant", "Value": "wg"}])
    athena.update_work_group(WorkGroup=name, Description="after", State="DISABLED", ConfigurationUpdates={
        "PublishCloudWatchMetricsEnabled": True, "RemoveBytesScannedCutoffPerQuery": True,
        "EngineVersion": {"SelectedEngineVersion": "Athena engine version 2"},
        "ResultConfigurationUpdates": {"OutputLocation": "s3://wg-bucket/other/", "RemoveEncryptionConfiguration": True}})
    group = athena.get_work_group(WorkGroup=name)["WorkGroup"]
    config = group["Configuration"]
    assert (group["Description"], group["State"]) == ("after", "DISABLED")
    assert config["PublishCloudWatchMetricsEnabled"] is True and "BytesScannedCutoffPerQuery" not in config
    assert config["ResultConfiguration"] == {"OutputLocation": "s3://wg-bucket/other/"}
    assert config["EngineVersion"]["EffectiveEngineVersion"] == "Athena engine version 2"
    assert config["EnforceWorkGroupConfiguration"] is True  # not in the update: unchanged
    with pytest.raises(ClientError, match="InvalidRequestException"):
        athena.update_work_group(WorkGroup=f"{name}-missing", Description="x")


def test_stock_moto_does_not_implement_update_work_group():
    """Why the correction exists.  If this fails, moto implements UpdateWorkGroup and the correction can go."""
    from moto import mock_aws

    with mock_aws():
        athena = boto3.client("athena", region_name=REGION)
        athena.create_work_group(Name="wg", Configuration=_workgroup_config(10 * 1024 ** 3))
        with pytest.raises(NotImplementedError, match="update_work_group"):
            athena.update_work_group(WorkGroup="wg", Description="after")


WORKGROUP_TF = """
provider "aws" {
  region                      = "%(region)s"
  skip_credentials_validation = true
  skip_metadata_api_check     = true
  max_retries                 = 2
}
variable "force_destroy" { default = true }
resource "aws_athena_workgroup" "wg" {
  name          = "%(name)s"
  force_destroy = var.force_destroy
  tags          = { tenant = "wg" }
  configuration {
    enforce_workgroup_configuration = true
    bytes_scanned_cutoff_per_query  = 10737418240
    result_configuration {
      output_location = "s3://wg-bucket/athena/"
    }
  }
}
"""


def test_terraform_applies_a_workgroup_adopted_by_import(aws_env, tmp_path):
    """What adoption after an interrupted apply does (infra/terragrunt/adoption.py): import the workgroup, then
    apply. An import reads ``force_destroy`` as false, so the apply updates the workgroup in place; on stock
    moto that UpdateWorkGroup answered 500 and the provider retried it for 15 minutes."""
    import os
    import subprocess

    from infra.local.terraform_config import cli_config

    name = f"wg-{uuid.uuid4().hex[:8]}"
    (tmp_path / "main.tf").write_text(WORKGROUP_TF % {"region": REGION, "name": name})
    log = tmp_path / "provider.log"  # the provider's requests and responses, for a failure's message
    env = {**os.environ, **aws_env, "TF_CLI_CONFIG_FILE": cli_config(), "TF_IN_AUTOMATION": "1",
           "TF_LOG_PROVIDER": "DEBUG", "TF_LOG_PATH": str(log)}

    def terraform(*args: str) -> subprocess.CompletedProcess:
        log.unlink(missing_ok=True)
        result = subprocess.run(["terraform", *args], cwd=tmp_path, env=env,
                                capture_output=True, text=True, timeout=300)
        assert result.returncode in (0, 2), (f"terraform {args[0]}: {result.stdout[-2000:]}{result.stderr[-2000:]}\n"
                                             f"provider log:\n{_http_lines(log)}")
        return result

    quiet = ("-no-color", "-input=false")
    terraform("init", *quiet)
    terraform("apply", "-auto-approve", *quiet)
    terraform("state", "rm", "aws_athena_workgroup.wg")
    terraform("import", *quiet, "aws_athena_workgroup.wg", name)
    plan = terraform("plan", "-detailed-exitcode", *quiet)
    assert plan.returncode == 2 and "force_destroy = false -> true" in plan.stdout
    terraform("apply", "-auto-approve", *quiet)
    assert terraform("plan", "-detailed-exitcode", *quiet).returncode == 0
    terraform("destroy", "-auto-approve", *quiet)


def _http_lines(log, keep: int = 60) -> str:
    """The last ``keep`` lines of a provider debug log about HTTP (requests, responses, errors), shortened."""
    if not log.is_file():
        return "(no log)"
    lines = [line[:400] for line in log.read_text(errors="replace").splitlines()
             if any(word in line for word in ("HTTP Re", "http.", "error", "Unsolicited", "retry", "attempt"))]
    return "\n".join(lines[-keep:])


def _inventory(bucket: str, versions: str = "All", fields=("Size",)) -> dict:
    return {"Id": "lake-daily", "IsEnabled": True, "IncludedObjectVersions": versions, "Schedule": {"Frequency": "Daily"},
            "Destination": {"S3BucketDestination": {"Bucket": f"arn:aws:s3:::{bucket}-logs", "Format": "Parquet",
                                                    "Prefix": "inventory"}}, "OptionalFields": list(fields)}


def test_inventory_configurations_are_deleted_alone_and_read_back_as_put(boto_session):
    s3 = boto_session("s3")
    bucket = f"inventory-{uuid.uuid4().hex[:12]}"
    s3.create_bucket(Bucket=bucket, CreateBucketConfiguration={"LocationConstraint": "eu-west-1"})
    s3.put_object(Bucket=bucket, Key="landing/a.json", Body=b"{}")
    s3.put_bucket_inventory_configuration(Bucket=bucket, Id="lake-daily",
                                          InventoryConfiguration=_inventory(bucket, "Current", ("Size",)))
    got = s3.get_bucket_inventory_configuration(Bucket=bucket, Id="lake-daily")["InventoryConfiguration"]
    assert got["IncludedObjectVersions"] == "Current" and got["OptionalFields"] == ["Size"]
    listed = s3.list_bucket_inventory_configurations(Bucket=bucket)["InventoryConfigurationList"]
    assert [(c["Id"], c["IncludedObjectVersions"], c["OptionalFields"]) for c in listed] == [("lake-daily", "Current", ["Size"])]
    s3.delete_bucket_inventory_configuration(Bucket=bucket, Id="lake-daily")
    assert "InventoryConfigurationList" not in s3.list_bucket_inventory_configurations(Bucket=bucket)
    assert s3.head_bucket(Bucket=bucket)["ResponseMetadata"]["HTTPStatusCode"] == 200  # the bucket is still there
    with pytest.raises(ClientError) as missing:
        s3.delete_bucket_inventory_configuration(Bucket=bucket, Id="lake-daily")
    assert missing.value.response["ResponseMetadata"]["HTTPStatusCode"] == 404
    # AWS's code for an unknown id, which terraform's destroy waits for after the delete (read as gone).
    assert missing.value.response["Error"]["Code"] == "NoSuchConfiguration"
    with pytest.raises(ClientError) as gone:
        s3.get_bucket_inventory_configuration(Bucket=bucket, Id="lake-daily")
    assert gone.value.response["Error"]["Code"] == "NoSuchConfiguration"


def test_stock_moto_deletes_the_bucket_for_delete_bucket_inventory_configuration():
    """Why the correction exists.  If this fails, moto routes the call itself and the correction can go."""
    from moto import mock_aws

    with mock_aws():
        s3 = boto3.client("s3", region_name=REGION)
        s3.create_bucket(Bucket="lake")  # us-east-1: no location constraint
        s3.put_bucket_inventory_configuration(Bucket="lake", Id="lake-daily", InventoryConfiguration=_inventory("lake"))
        s3.delete_bucket_inventory_configuration(Bucket="lake", Id="lake-daily")
        assert "lake" not in [b["Name"] for b in s3.list_buckets()["Buckets"]]

def _folder_whose_only_object_was_deleted(s3, bucket: str) -> None:
    s3.create_bucket(Bucket=bucket)
    s3.put_bucket_versioning(Bucket=bucket, VersioningConfiguration={"Status": "Enabled"})
    s3.put_object(Bucket=bucket, Key="q/.spark-staging-1/part-0.parquet", Body=b"x")
    s3.put_object(Bucket=bucket, Key="q/event_date=2020-11-16/part-0.parquet", Body=b"x")
    s3.delete_object(Bucket=bucket, Key="q/.spark-staging-1/part-0.parquet")  # a delete marker is now its latest


def test_a_folder_listing_names_only_prefixes_that_hold_current_objects(boto_session):
    """As on AWS: a deleted folder of a versioned bucket (only delete markers and old versions left under it)
    is not a common prefix; s3a would see it as a sub-folder forever."""
    s3 = boto_session("s3", REGION)
    bucket = f"listing-{uuid.uuid4().hex[:12]}"
    _folder_whose_only_object_was_deleted(s3, bucket)
    listed = s3.list_objects_v2(Bucket=bucket, Prefix="q/", Delimiter="/")
    assert [p["Prefix"] for p in listed.get("CommonPrefixes", [])] == ["q/event_date=2020-11-16/"]
    assert [p["Prefix"] for p in s3.list_objects(Bucket=bucket, Prefix="q/", Delimiter="/").get("CommonPrefixes", [])] \
        == ["q/event_date=2020-11-16/"]
    assert [p["Prefix"] for p in s3.list_objects_v2(Bucket=bucket, Delimiter="/").get("CommonPrefixes", [])] == ["q/"]
    # The versions are still there: only the listing of current objects changed.
    versions = s3.list_object_versions(Bucket=bucket, Prefix="q/.spark-staging-1/")
    assert len(versions["Versions"]) == 1 and len(versions["DeleteMarkers"]) == 1


def test_stock_moto_lists_a_deleted_folder_as_a_common_prefix():
    """Why the correction exists.  If this fails, moto lists only live prefixes and the correction can go."""
    from moto import mock_aws

    with mock_aws():
        s3 = boto3.client("s3", region_name=REGION)
        _folder_whose_only_object_was_deleted(s3, "stock-listing")
        listed = s3.list_objects_v2(Bucket="stock-listing", Prefix="q/", Delimiter="/")
        assert "q/.spark-staging-1/" in [p["Prefix"] for p in listed["CommonPrefixes"]]


_AUTH = {"Authorization": "AWS4-HMAC-SHA256 Credential=testing/20260101/eu-west-1/s3/aws4_request, "
                          "SignedHeaders=host, Signature=0"}


def _https(emulator):
    import http.client
    import ssl
    from urllib.parse import urlsplit

    url = urlsplit(emulator.endpoint)
    return http.client.HTTPSConnection(url.hostname, url.port, timeout=30,
                                       context=ssl.create_default_context(cafile=emulator.ca_bundle))


def test_requests_share_one_connection_and_a_body_moto_refuses_unread_does_not_reach_the_next(emulator,
                                                                                              boto_session):
    bucket = f"keepalive-{uuid.uuid4().hex[:8]}"
    boto_session("s3").create_bucket(Bucket=bucket, CreateBucketConfiguration={"LocationConstraint": "eu-west-1"})
    conn = _https(emulator)
    try:
        conn.request("PUT", f"/{bucket}/one", body=b"hello", headers=_AUTH)
        first = conn.getresponse()
        assert (first.status, first.read(), first.getheader("Connection")) == (200, b"", None)
        sock = conn.sock
        # A body sent to a bucket that does not exist: moto answers 404 before it needs the body. The 100 kB
        # are read anyway, so the next request on the connection starts where this one ended.
        conn.request("PUT", f"/{bucket}-missing/two", body=b"x" * 100_000, headers=_AUTH)
        refused = conn.getresponse()
        assert refused.status == 404 and b"NoSuchBucket" in refused.read()
        conn.request("GET", f"/{bucket}/one", headers=_AUTH)
        again = conn.getresponse()
        assert (again.status, again.read()) == (200, b"hello")
        assert conn.sock is sock  # http.client reopens a closed connection itself: the same socket, no reconnect
        # A client that asks to close gets its answer, then the connection closes.
        conn.request("GET", f"/{bucket}/one", headers={**_AUTH, "Connection": "close"})
        last = conn.getresponse()
        assert (last.status, last.read(), last.getheader("Connection")) == (200, b"hello", "close")
        assert conn.sock is None
    finally:
        conn.close()


def test_stock_moto_server_closes_the_connection_after_every_response(tmp_path):
    """Why the keep-alive exists (werkzeug 3.1 under moto 5.2.5 sends ``Connection: close`` on every
    response). If this fails, the stock server keeps connections itself."""
    import http.client
    import subprocess
    import sys
    import time

    from infra.local.emulator import free_port

    port = free_port()
    proc = subprocess.Popen([sys.executable, "-m", "moto.server", "-H", "127.0.0.1", "-p", str(port)],
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        conn = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
        for _ in range(100):
            try:
                conn.request("GET", "/moto-api/data.json")
                break
            except ConnectionRefusedError:
                conn.close()
                time.sleep(0.1)
        answer = conn.getresponse()
        assert answer.status == 200 and answer.getheader("Connection") == "close"
        answer.read()
        assert conn.sock is None
    finally:
        proc.terminate()
        proc.wait(timeout=10)


def test_backend_lookups_are_made_once_per_host_and_route_as_before():
    """Run in a process of its own: the cache is installed on moto's classes."""
    import subprocess
    import sys

    probe = (
        "import os\n"
        "from infra.local.moto_server import _cache_backend_lookups\n"
        "from moto.moto_server.werkzeug_app import DomainDispatcherApplication, create_backend_app\n"
        "_cache_backend_lookups()\n"
        "app = DomainDispatcherApplication(create_backend_app)\n"
        "first = [app.get_backend_for_host(h) for h in ('s3.eu-west-1.amazonaws.com', 'kms.eu-west-1.amazonaws.com',"
        " 'ec2', 'example.org')]\n"
        "def refuse(*a): raise AssertionError('the module folder was listed again')\n"
        "os.listdir = refuse\n"
        "again = [app.get_backend_for_host(h) for h in ('s3.eu-west-1.amazonaws.com', 'kms.eu-west-1.amazonaws.com',"
        " 'ec2', 'example.org')]\n"
        "print(first, again)\n"
        "assert first == again == ['s3', 'kms', 'ec2', None], first\n")
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr[-2000:]


def test_a_request_whose_length_cannot_be_read_ends_its_connection(emulator):
    """Where such a request's body ends is unknown, so nothing after it on the connection could be read right:
    the answer says ``Connection: close`` and the connection closes."""
    conn = _https(emulator)
    try:
        conn.putrequest("GET", "/moto-api/data.json")
        conn.putheader("Content-Length", "not-a-number")
        conn.endheaders()
        answer = conn.getresponse()
        answer.read()
        assert answer.getheader("Connection") == "close" and conn.sock is None
    finally:
        conn.close()


# What terraform's AWS provider 5.100.0 sends (its first words; the rest names the SDK's service and modules).
PROVIDER_AGENT = ("APN/1.0 HashiCorp/1.0 Terraform/1.11.4 (+https://www.terraform.io) terraform-provider-aws/5.100.0 "
                  "(+https://registry.terraform.io/providers/hashicorp/aws) aws-sdk-go-v2/1.36.3 ua/2.1 os/linux "
                  "lang/go#1.24.3 md/GOOS#linux md/GOARCH#amd64 api/athena#1.50.4")


def test_the_aws_sdk_for_go_gets_a_connection_per_request_and_other_clients_keep_theirs(emulator, boto_session):
    """infra/local/moto_server.py, ``GO_SDK``: terraform's provider gets ``Connection: close`` on every answer, as
    from stock moto; a client of another SDK on the same server keeps its connection."""
    bucket = f"go-sdk-{uuid.uuid4().hex[:8]}"
    s3 = boto_session("s3")
    s3.create_bucket(Bucket=bucket, CreateBucketConfiguration={"LocationConstraint": "eu-west-1"})
    s3.put_object(Bucket=bucket, Key="one", Body=b"hello")
    conn = _https(emulator)
    try:
        conn.request("GET", f"/{bucket}/one", headers={**_AUTH, "User-Agent": PROVIDER_AGENT})
        answer = conn.getresponse()
        assert (answer.status, answer.read(), answer.getheader("Connection")) == (200, b"hello", "close")
        assert conn.sock is None
        for _ in range(2):
            conn.request("GET", f"/{bucket}/one", headers={**_AUTH, "User-Agent": "Boto3/1.35.0 md/Botocore#1.35.0"})
            answer = conn.getresponse()
            assert (answer.status, answer.read(), answer.getheader("Connection")) == (200, b"hello", None)
            assert conn.sock is not None
    finally:
        conn.close()


def test_a_request_the_server_cannot_parse_ends_its_connection(emulator):
    """A header line over http.server's 65,536 bytes is answered 431 before its body is read; the body would
    be read as the next request on the connection, so the answer says ``Connection: close`` and it closes."""
    conn = _https(emulator)
    try:
        conn.request("PUT", "/any-bucket/key", body=b"GET / HTTP/1.1\r\n\r\n", headers={**_AUTH, "X-Long": "x" * 70_000})
        answer = conn.getresponse()
        answer.read()
        assert (answer.status, answer.getheader("Connection")) == (431, "close") and conn.sock is None
    finally:
        conn.close()


# ---- Lake Formation (the tenant module's grants and tags; spark_jobs/tables/lf_tags.py) ---------------------------
LF_REGION = "ap-southeast-2"  # a region no other test of the session uses: Lake Formation's catalog is per region


def _lf_tag_policy(cls_key: str, layer_key: str, reverse: bool = False) -> dict:
    expression = [{"TagKey": cls_key, "TagValues": ["none"]}, {"TagKey": layer_key, "TagValues": ["gold"]}]
    return {"LFTagPolicy": {"ResourceType": "TABLE", "Expression": expression[::-1] if reverse else expression}}


def _lf_tags(lf) -> tuple[str, str]:
    cls_key, layer_key = f"t{uuid.uuid4().hex[:8]}-classification", f"t{uuid.uuid4().hex[:8]}-layer"
    lf.create_lf_tag(TagKey=cls_key, TagValues=["pii", "none"])
    lf.create_lf_tag(TagKey=layer_key, TagValues=["silver", "gold"])
    return cls_key, layer_key


def test_lake_formation_grants_on_a_tag_or_expression_are_listed_and_revoked_as_on_aws(boto_session):
    lf = boto_session("lakeformation", LF_REGION)
    cls_key, layer_key = _lf_tags(lf)
    consumer = {"DataLakePrincipalIdentifier": f"arn:aws:iam::123456789012:role/{uuid.uuid4().hex[:8]}"}
    lf.grant_permissions(Principal=consumer, Resource=_lf_tag_policy(cls_key, layer_key), Permissions=["SELECT"])
    lf.grant_permissions(Principal=consumer, Resource={"LFTag": {"TagKey": cls_key, "TagValues": ["pii", "none"]}},
                         Permissions=["ASSOCIATE"])
    # How the AWS provider reads a grant back: the principal and the resource; an expression matches in any order.
    listed = lf.list_permissions(Principal=consumer, Resource=_lf_tag_policy(cls_key, layer_key, reverse=True))
    assert [p["Permissions"] for p in listed["PrincipalResourcePermissions"]] == [["SELECT"]]
    listed = lf.list_permissions(Principal=consumer, Resource={"LFTag": {"TagKey": cls_key, "TagValues": ["none"]}})
    assert [p["Permissions"] for p in listed["PrincipalResourcePermissions"]] == [["ASSOCIATE"]]
    assert lf.list_permissions(Resource=_lf_tag_policy(layer_key, cls_key))["PrincipalResourcePermissions"] == []
    lf.revoke_permissions(Principal=consumer, Resource=_lf_tag_policy(cls_key, layer_key), Permissions=["SELECT"])
    assert lf.list_permissions(Principal=consumer, Resource=_lf_tag_policy(cls_key, layer_key))[
        "PrincipalResourcePermissions"] == []
    # The provider's destroy revokes again until AWS says the grantee holds nothing.
    with pytest.raises(ClientError, match="No permissions revoked. Grantee has no"):
        lf.revoke_permissions(Principal=consumer, Resource=_lf_tag_policy(cls_key, layer_key), Permissions=["SELECT"])


def test_lake_formation_tags_of_a_resource_are_set_per_key_and_per_column(boto_session):
    lf = boto_session("lakeformation", LF_REGION)
    cls_key, layer_key = _lf_tags(lf)
    database = f"db_{uuid.uuid4().hex[:8]}"
    lf.add_lf_tags_to_resource(Resource={"Database": {"Name": database}},
                               LFTags=[{"TagKey": cls_key, "TagValues": ["pii"]}, {"TagKey": layer_key, "TagValues": ["gold"]}])
    lf.add_lf_tags_to_resource(Resource={"Database": {"Name": database}}, LFTags=[{"TagKey": cls_key, "TagValues": ["none"]}])
    tags = lf.get_resource_lf_tags(Resource={"Database": {"Name": database}}, ShowAssignedLFTags=True)
    assert {t["TagKey"]: t["TagValues"] for t in tags["LFTagOnDatabase"]} == {cls_key: ["none"], layer_key: ["gold"]}
    columns = {"TableWithColumns": {"DatabaseName": database, "Name": "t", "ColumnNames": ["a", "b"]}}
    lf.add_lf_tags_to_resource(Resource=columns, LFTags=[{"TagKey": cls_key, "TagValues": ["none"]}])
    lf.remove_lf_tags_from_resource(Resource={"TableWithColumns": {**columns["TableWithColumns"], "ColumnNames": ["a"]}},
                                    LFTags=[{"TagKey": cls_key, "TagValues": ["none"]}])
    tags = lf.get_resource_lf_tags(Resource=columns, ShowAssignedLFTags=True)
    assert [(c["Name"], c["LFTags"][0]["TagValues"]) for c in tags["LFTagsOnColumns"]] == [("b", ["none"])]
    # A table nobody tagged has no tags (stock moto: HTTP 500); a value the tag does not have is refused.
    assert "LFTagsOnTable" not in lf.get_resource_lf_tags(Resource={"Table": {"DatabaseName": database, "Name": "t"}})
    failures = lf.add_lf_tags_to_resource(Resource=columns, LFTags=[{"TagKey": cls_key, "TagValues": ["secret"]}])
    assert failures["Failures"] and failures["Failures"][0]["Error"]["ErrorCode"] == "EntityNotFoundException"


def test_stock_moto_lake_formation_differs_where_corrected():
    """Why the corrections exist. If one of these fails, moto 5.x does it itself and that correction can go."""
    from moto import mock_aws

    with mock_aws():
        lf = boto3.client("lakeformation", region_name=REGION)
        lf.create_lf_tag(TagKey="c", TagValues=["pii", "none"])
        lf.create_lf_tag(TagKey="l", TagValues=["gold"])
        principal = {"DataLakePrincipalIdentifier": "arn:aws:iam::123456789012:role/r"}
        with pytest.raises(ClientError, match="Resource must have either the catalog, table or database field"):
            lf.list_permissions(Principal=principal, Resource={"LFTag": {"TagKey": "c", "TagValues": ["none"]}})
        lf.revoke_permissions(Principal=principal, Resource={"Database": {"Name": "d"}}, Permissions=["DESCRIBE"])
        database = {"Database": {"Name": "d"}}
        lf.add_lf_tags_to_resource(Resource=database, LFTags=[{"TagKey": "c", "TagValues": ["pii"]},
                                                              {"TagKey": "l", "TagValues": ["gold"]}])
        lf.add_lf_tags_to_resource(Resource=database, LFTags=[{"TagKey": "c", "TagValues": ["none"]}])
        assert [t["TagKey"] for t in lf.get_resource_lf_tags(Resource=database)["LFTagOnDatabase"]] == ["c"]
        with pytest.raises(KeyError):  # in the server: HTTP 500
            lf.get_resource_lf_tags(Resource={"Table": {"DatabaseName": "d", "Name": "never-tagged"}})


# ---- Step Functions and EventBridge (issue 54: the tenant's orchestration) ------------------------------------
def _wait(sfn, execution_arn: str, timeout: float = 30.0) -> dict:
    import time

    deadline = time.monotonic() + timeout
    while (described := sfn.describe_execution(executionArn=execution_arn))["status"] == "RUNNING":
        assert time.monotonic() < deadline, f"{execution_arn} still RUNNING"
        time.sleep(0.2)
    return described


def test_state_machines_run_their_integrations_over_tls_with_the_apis_member_names(boto_session):
    """The interpreter is on from the start, its service calls reach this server over TLS, ``Parameters`` are mapped
    onto the API's members (``states:startExecution`` takes ``StateMachineArn``), and an answer holding a timestamp
    (``StartDate``) becomes the state's output."""
    import json

    sfn, sqs, sns, iam = (boto_session(s, REGION) for s in ("stepfunctions", "sqs", "sns", "iam"))
    role = iam.create_role(RoleName=f"sfn-{uuid.uuid4().hex[:8]}", AssumeRolePolicyDocument="{}")["Role"]["Arn"]
    topic = sns.create_topic(Name=f"t-{uuid.uuid4().hex[:8]}")["TopicArn"]
    queue = sqs.create_queue(QueueName=f"q-{uuid.uuid4().hex[:8]}")["QueueUrl"]
    queue_arn = sqs.get_queue_attributes(QueueUrl=queue, AttributeNames=["QueueArn"])["Attributes"]["QueueArn"]
    sns.subscribe(TopicArn=topic, Protocol="sqs", Endpoint=queue_arn, Attributes={"RawMessageDelivery": "true"})
    child = sfn.create_state_machine(name=f"child-{uuid.uuid4().hex[:8]}", roleArn=role, definition=json.dumps(
        {"StartAt": "P", "States": {"P": {"Type": "Task", "Resource": "arn:aws:states:::sns:publish", "End": True,
                                          "Parameters": {"TopicArn": topic, "Message.$": "$.say"}}}}))["stateMachineArn"]
    parent = sfn.create_state_machine(name=f"parent-{uuid.uuid4().hex[:8]}", roleArn=role, definition=json.dumps(
        {"StartAt": "S", "States": {"S": {"Type": "Task", "Resource": "arn:aws:states:::states:startExecution",
                                          "Parameters": {"StateMachineArn": child, "Name": "the-child",
                                                         "Input": {"say": "hello"}}, "End": True}}}))["stateMachineArn"]
    done = _wait(sfn, sfn.start_execution(stateMachineArn=parent, name="p")["executionArn"])
    assert done["status"] == "SUCCEEDED", done
    output = json.loads(done["output"])
    assert output["ExecutionArn"].endswith(":the-child") and output["StartDate"][:4].isdigit()
    assert _wait(sfn, output["ExecutionArn"])["status"] == "SUCCEEDED"
    assert [m["Body"] for m in sqs.receive_message(QueueUrl=queue, WaitTimeSeconds=2)["Messages"]] == ["hello"]


def test_stock_moto_sends_task_parameters_as_written():
    """Why the parameters are mapped: stock moto 5.2.5 calls Step Functions' own API with ``StateMachineArn`` and
    fails the state (``States.Runtime``). If this fails, moto maps them itself and the correction can go."""
    import json

    from moto import mock_aws

    with mock_aws(config={"stepfunctions": {"execute_state_machine": True}}):
        sfn = boto3.client("stepfunctions", region_name=REGION)
        role = boto3.client("iam", region_name=REGION).create_role(RoleName="r", AssumeRolePolicyDocument="{}")
        machine = sfn.create_state_machine(name="m", roleArn=role["Role"]["Arn"], definition=json.dumps(
            {"StartAt": "S", "States": {"S": {"Type": "Task", "Resource": "arn:aws:states:::states:startExecution",
                                              "Parameters": {"StateMachineArn.$": "$$.StateMachine.Id", "Name": "x"},
                                              "End": True}}}))["stateMachineArn"]
        done = _wait(sfn, sfn.start_execution(stateMachineArn=machine, name="e")["executionArn"])
        assert (done["status"], done.get("error")) == ("FAILED", "States.Runtime")


def test_a_definition_is_validated_with_the_interpreters_parser_and_versions_are_listed(boto_session):
    import json

    sfn = boto_session("stepfunctions", REGION)
    good = json.dumps({"StartAt": "A", "States": {"A": {"Type": "Pass", "End": True}}})
    assert sfn.validate_state_machine_definition(definition=good)["result"] == "OK"
    bad = sfn.validate_state_machine_definition(definition=json.dumps({"StartAt": "A", "States": {"A": {"Type": "Nope"}}}))
    assert bad["result"] == "FAIL" and bad["diagnostics"][0]["severity"] == "ERROR"
    role = boto_session("iam", REGION).create_role(RoleName=f"v-{uuid.uuid4().hex[:8]}", AssumeRolePolicyDocument="{}")
    machine = sfn.create_state_machine(name=f"v-{uuid.uuid4().hex[:8]}", definition=good, roleArn=role["Role"]["Arn"],
                                       publish=True)
    [version] = sfn.list_state_machine_versions(stateMachineArn=machine["stateMachineArn"])["stateMachineVersions"]
    assert version["stateMachineVersionArn"] == machine["stateMachineArn"] + ":1"


def test_stock_moto_does_not_implement_validation_or_versions():
    """Why the two are implemented: the AWS provider calls both for every state machine, and retried their HTTP 500."""
    from moto import mock_aws

    with mock_aws():
        sfn = boto3.client("stepfunctions", region_name=REGION)
        with pytest.raises(NotImplementedError, match="validate_state_machine_definition"):
            sfn.validate_state_machine_definition(definition="{}")


def test_an_input_transformer_inserts_a_list_of_objects_as_json(boto_session):
    import json

    events, sqs = boto_session("events", REGION), boto_session("sqs", REGION)
    url = sqs.create_queue(QueueName=f"lists-{uuid.uuid4().hex[:8]}")["QueueUrl"]
    arn = sqs.get_queue_attributes(QueueUrl=url, AttributeNames=["QueueArn"])["Attributes"]["QueueArn"]
    rule = f"lists-{uuid.uuid4().hex[:8]}"
    events.put_rule(Name=rule, EventPattern=json.dumps({"source": ["lists.test"]}))
    events.put_targets(Rule=rule, Targets=[{"Id": "q", "Arn": arn, "InputTransformer": {
        "InputPathsMap": {"rules": "$.detail.rules"}, "InputTemplate": '{"rules": <rules>}'}}])
    rules = [{"name": "a", "failed_rows": 3}, {"name": "b", "failed_rows": 1}]
    events.put_events(Entries=[{"Source": "lists.test", "DetailType": "t", "Detail": json.dumps({"rules": rules})}])
    [message] = sqs.receive_message(QueueUrl=url, WaitTimeSeconds=2)["Messages"]
    assert json.loads(message["Body"]) == {"rules": rules}


def test_stock_moto_writes_each_object_of_a_list_as_a_quoted_string():
    """Why lists are corrected. If this fails, moto inserts them as AWS does and the correction can go."""
    import json

    from moto import mock_aws

    with mock_aws():
        events, sqs = boto3.client("events", region_name=REGION), boto3.client("sqs", region_name=REGION)
        url = sqs.create_queue(QueueName="q")["QueueUrl"]
        arn = sqs.get_queue_attributes(QueueUrl=url, AttributeNames=["QueueArn"])["Attributes"]["QueueArn"]
        events.put_rule(Name="r", EventPattern=json.dumps({"source": ["lists.test"]}))
        events.put_targets(Rule="r", Targets=[{"Id": "q", "Arn": arn, "InputTransformer": {
            "InputPathsMap": {"rules": "$.detail.rules"}, "InputTemplate": '{"rules": <rules>}'}}])
        events.put_events(Entries=[{"Source": "lists.test", "DetailType": "t",
                                    "Detail": json.dumps({"rules": [{"name": "a"}]})}])
        [message] = sqs.receive_message(QueueUrl=url)["Messages"]
        assert json.loads(message["Body"]) == {"rules": ['{"name": "a"}']}


def test_the_tags_of_a_table_answer_its_glue_columns_tags_as_on_aws(boto_session):
    lf, glue = boto_session("lakeformation", LF_REGION), boto_session("glue", LF_REGION)
    cls_key, _ = _lf_tags(lf)
    database = f"db_{uuid.uuid4().hex[:8]}"
    glue.create_database(DatabaseInput={"Name": database})
    glue.create_table(DatabaseName=database, TableInput={"Name": "t", "StorageDescriptor": {
        "Columns": [{"Name": "user_id", "Type": "string"}, {"Name": "n", "Type": "bigint"},
                    {"Name": "untagged", "Type": "string"}]}})
    for column, value in (("user_id", "pii"), ("n", "none")):
        lf.add_lf_tags_to_resource(Resource={"TableWithColumns": {"DatabaseName": database, "Name": "t",
                                                                  "ColumnNames": [column]}},
                                   LFTags=[{"TagKey": cls_key, "TagValues": [value]}])
    tags = lf.get_resource_lf_tags(Resource={"Table": {"DatabaseName": database, "Name": "t"}}, ShowAssignedLFTags=True)
    assert {c["Name"]: c["LFTags"][0]["TagValues"] for c in tags["LFTagsOnColumns"]} == {"user_id": ["pii"], "n": ["none"]}
    # A table Glue does not hold: its own tags only, as before.
    assert "LFTagsOnColumns" not in lf.get_resource_lf_tags(Resource={"Table": {"DatabaseName": database, "Name": "x"}})


def test_a_query_in_a_workgroup_that_enforces_its_configuration_writes_its_results_there(boto_session):
    athena = boto_session("athena", LF_REGION)
    group = f"wg-{uuid.uuid4().hex[:8]}"
    athena.create_work_group(Name=group, Configuration={
        "EnforceWorkGroupConfiguration": True,
        "ResultConfiguration": {"OutputLocation": "s3://lake/athena/personal/",
                                "EncryptionConfiguration": {"EncryptionOption": "SSE_KMS", "KmsKey": "k"}}})
    query = athena.start_query_execution(QueryString="SELECT 1", WorkGroup=group,
                                         ResultConfiguration={"OutputLocation": "s3://lake/athena/consumer/"})
    execution = athena.get_query_execution(QueryExecutionId=query["QueryExecutionId"])["QueryExecution"]
    assert execution["ResultConfiguration"]["OutputLocation"] == (
        f"s3://lake/athena/personal/{query['QueryExecutionId']}.csv")


def test_stock_moto_answers_no_column_tags_for_a_table_and_ignores_an_enforced_workgroup():
    """Why the two corrections above exist (see test_stock_moto_lake_formation_differs_where_corrected)."""
    from moto import mock_aws

    with mock_aws():
        lf, glue = boto3.client("lakeformation", region_name=REGION), boto3.client("glue", region_name=REGION)
        lf.create_lf_tag(TagKey="c", TagValues=["pii", "none"])
        glue.create_database(DatabaseInput={"Name": "d"})
        glue.create_table(DatabaseName="d", TableInput={"Name": "t", "StorageDescriptor": {
            "Columns": [{"Name": "a", "Type": "string"}]}})
        lf.add_lf_tags_to_resource(Resource={"Table": {"DatabaseName": "d", "Name": "t"}},
                                   LFTags=[{"TagKey": "c", "TagValues": ["pii"]}])
        lf.add_lf_tags_to_resource(Resource={"TableWithColumns": {"DatabaseName": "d", "Name": "t", "ColumnNames": ["a"]}},
                                   LFTags=[{"TagKey": "c", "TagValues": ["none"]}])
        assert "LFTagsOnColumns" not in lf.get_resource_lf_tags(Resource={"Table": {"DatabaseName": "d", "Name": "t"}})
        athena = boto3.client("athena", region_name=REGION)
        athena.create_work_group(Name="w", Configuration={"EnforceWorkGroupConfiguration": True, "ResultConfiguration": {
            "OutputLocation": "s3://lake/athena/personal/"}})
        query = athena.start_query_execution(QueryString="SELECT 1", WorkGroup="w")
        execution = athena.get_query_execution(QueryExecutionId=query["QueryExecutionId"])["QueryExecution"]
        assert "OutputLocation" not in execution.get("ResultConfiguration", {})


DEFAULTS_REGION = "ca-central-1"  # no other test uses it: this one changes the region's Lake Formation settings
OPEN = [{"Principal": {"DataLakePrincipalIdentifier": "IAM_ALLOWED_PRINCIPALS"}, "Permissions": ["ALL"]}]


def test_a_new_database_takes_the_accounts_lake_formation_table_defaults_as_on_aws(boto_session):
    """Out of the box (moto's settings start as AWS's) a new database hands its tables to IAM_ALLOWED_PRINCIPALS; once
    the settings hold no such default, a new one does not; defaults given with the database are kept either way."""
    lf, glue = boto_session("lakeformation", DEFAULTS_REGION), boto_session("glue", DEFAULTS_REGION)
    assert lf.get_data_lake_settings()["DataLakeSettings"]["CreateTableDefaultPermissions"] == OPEN
    suffix = uuid.uuid4().hex[:8]
    glue.create_database(DatabaseInput={"Name": f"open_{suffix}"})
    glue.create_database(DatabaseInput={"Name": f"given_{suffix}", "CreateTableDefaultPermissions": []})
    lf.put_data_lake_settings(DataLakeSettings={"DataLakeAdmins": [
        {"DataLakePrincipalIdentifier": "arn:aws:iam::123456789012:role/admin"}]})
    glue.create_database(DatabaseInput={"Name": f"closed_{suffix}"})

    def defaults(name: str) -> list:
        return glue.get_database(Name=name)["Database"].get("CreateTableDefaultPermissions") or []

    assert defaults(f"open_{suffix}") == OPEN
    assert defaults(f"given_{suffix}") == [] and defaults(f"closed_{suffix}") == []


def test_stock_moto_gives_a_new_database_no_table_defaults():
    """Why the correction exists: moto 5.2.5 starts with the open defaults but never copies them into a database."""
    from moto import mock_aws

    with mock_aws():
        lf, glue = boto3.client("lakeformation", region_name=REGION), boto3.client("glue", region_name=REGION)
        assert lf.get_data_lake_settings()["DataLakeSettings"]["CreateTableDefaultPermissions"] == OPEN
        glue.create_database(DatabaseInput={"Name": "d"})
        assert not glue.get_database(Name="d")["Database"].get("CreateTableDefaultPermissions")


def test_access_logs_are_delivered_in_batches_not_an_object_per_request(boto_session):
    import json
    import time

    from infra.local.moto_server import ACCESS_LOG_FLUSH_SECONDS

    s3 = boto_session("s3", REGION)
    source, logs = f"logged-{uuid.uuid4().hex[:8]}", f"logs-{uuid.uuid4().hex[:8]}"
    s3.create_bucket(Bucket=source)
    s3.create_bucket(Bucket=logs)
    s3.put_bucket_policy(Bucket=logs, Policy=json.dumps({"Version": "2012-10-17", "Statement": [{
        "Effect": "Allow", "Principal": {"Service": "logging.s3.amazonaws.com"}, "Action": "s3:PutObject",
        "Resource": f"arn:aws:s3:::{logs}/s3-access/{source}/*"}]}))
    s3.put_bucket_logging(Bucket=source, BucketLoggingStatus={
        "LoggingEnabled": {"TargetBucket": logs, "TargetPrefix": f"s3-access/{source}/"}})
    for n in range(30):
        s3.put_object(Bucket=source, Key=f"k{n}", Body=b"x")
    deadline = time.monotonic() + 4 * ACCESS_LOG_FLUSH_SECONDS
    records: list[str] = []
    while time.monotonic() < deadline and len(records) < 30:
        time.sleep(1)
        objects = s3.list_objects_v2(Bucket=logs, Prefix=f"s3-access/{source}/").get("Contents", [])
        records = [line for o in objects
                   for line in s3.get_object(Bucket=logs, Key=o["Key"])["Body"].read().decode().splitlines()]
    assert len([r for r in records if "PUT /" in r]) >= 30
    assert len(objects) <= 4, len(objects)  # a few deliveries, not one object per request
