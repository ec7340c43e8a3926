"""`land` at size: a file larger than the part size goes up as a multipart upload (emulator, SSE-KMS with the key),
create-only as a single put is, and an upload that fails or is interrupted leaves neither an object nor parts.

The session emulator with a bucket and a key of this module's own (no tenant applied), parts of 5 MiB (S3's
smallest, ``--part-size-mib 5``) and an 11 MiB file: three parts. Faults are injected into the real upload:
a client that passes every call to the emulator and fails the third ``UploadPart``, and a process that sends
itself SIGTERM after two parts went up. The local-folder lake's streamed copy is checked here too.
"""
from __future__ import annotations

import hashlib
import json
import os
import subprocess
import sys
import uuid
from pathlib import Path

import pytest
from botocore.exceptions import ClientError, EndpointConnectionError

from spark_jobs import cli
from spark_jobs.contract.model import parse_contract
from spark_jobs.lake.config import LakeConfig
from spark_jobs.landing import land
from spark_jobs.landing.files import check_file
from tests.conftest import REPO_ROOT

pytestmark = pytest.mark.integration

REGION = "eu-west-1"
MiB = 1024 * 1024
CONTRACT_DOC = {
    "dataset": "readings", "landing": {"format": "csv", "null_values": ["", "NA"]}, "key": ["id"], "event_time": "ts",
    "schema": [{"name": "id", "type": "string", "required": True}, {"name": "ts", "type": "timestamp", "required": True},
               {"name": "v", "type": "double"}],
}
CONTRACT = parse_contract(CONTRACT_DOC)


def _csv(path: Path, size: int, salt: str = "") -> Path:
    """A valid CSV of about ``size`` bytes (distinct content per ``salt``)."""
    lines = [b"id,ts,v\n"]
    total, i = len(lines[0]), 0
    while total < size:
        line = f"{salt}{i},2024-01-01T00:00:00Z,{i % 97}.5\n".encode()
        lines.append(line)
        total += len(line)
        i += 1
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(b"".join(lines))
    return path


@pytest.fixture(scope="module")
def lake(aws_env):
    """A versioned bucket and a KMS key of this module's own on the session emulator."""
    import boto3

    session = boto3.session.Session(aws_access_key_id=aws_env["AWS_ACCESS_KEY_ID"],
                                    aws_secret_access_key=aws_env["AWS_SECRET_ACCESS_KEY"], region_name=REGION)
    kw = {"endpoint_url": aws_env["AWS_ENDPOINT_URL"], "verify": aws_env["AWS_CA_BUNDLE"]}
    s3, kms = session.client("s3", **kw), session.client("kms", **kw)
    bucket = f"land-multipart-{uuid.uuid4().hex[:8]}"
    s3.create_bucket(Bucket=bucket, CreateBucketConfiguration={"LocationConstraint": REGION})
    s3.put_bucket_versioning(Bucket=bucket, VersioningConfiguration={"Status": "Enabled"})
    key_arn = kms.create_key(Description="land multipart test")["KeyMetadata"]["Arn"]
    config = LakeConfig(lake_uri=f"s3a://{bucket}", kms_key_arn=key_arn, region=REGION,
                        s3_endpoint=aws_env["AWS_ENDPOINT_URL"], ca_bundle=aws_env["AWS_CA_BUNDLE"])
    lake_args = ["--lake-uri", config.lake_uri, "--kms-key-arn", key_arn, "--region", REGION,
                 "--s3-endpoint", config.s3_endpoint, "--ca-bundle", config.ca_bundle]
    return {"s3": s3, "bucket": bucket, "key_arn": key_arn, "config": config, "args": lake_args}


@pytest.fixture
def env(aws_env, tmp_path, monkeypatch):
    folder = tmp_path / "contracts"
    folder.mkdir()
    (folder / "readings.yaml").write_text(json.dumps(CONTRACT_DOC))
    values = {**aws_env, "TENANTLAKE_CONTRACTS_DIR": str(folder), "TENANTLAKE_STATE_DIR": str(tmp_path / "state")}
    for name, value in values.items():
        monkeypatch.setenv(name, value)
    return values


def _versions(lake, key: str) -> list[dict]:
    answer = lake["s3"].list_object_versions(Bucket=lake["bucket"], Prefix=key)
    return answer.get("Versions", []) + answer.get("DeleteMarkers", [])


def _uploads(lake) -> list[dict]:
    return lake["s3"].list_multipart_uploads(Bucket=lake["bucket"]).get("Uploads", [])


def _key(path: Path) -> str:
    return f"landing/readings/{hashlib.sha256(path.read_bytes()).hexdigest()}.csv"


class _Client:
    """The emulator's client, with a fault or a refusal put in: every other call goes through unchanged."""

    def __init__(self, real, fail_part: int | None = None, fault: BaseException | None = None,
                 head_denied: bool = False):
        self.real, self.fail_part, self.fault, self.head_denied = real, fail_part, fault, head_denied
        self.parts_sent = 0
        self.parts_on_server_at_fault: list[int] = []

    def upload_part(self, **kwargs):
        if kwargs["PartNumber"] == self.fail_part:
            listed = self.real.list_parts(Bucket=kwargs["Bucket"], Key=kwargs["Key"], UploadId=kwargs["UploadId"])
            self.parts_on_server_at_fault = [p["PartNumber"] for p in listed.get("Parts", [])]
            raise self.fault
        self.parts_sent += 1
        return self.real.upload_part(**kwargs)

    def head_object(self, **kwargs):
        if self.head_denied:  # what the ingest-writer role gets: it may put, not read
            raise ClientError({"Error": {"Code": "403", "Message": "Forbidden"}}, "HeadObject")
        return self.real.head_object(**kwargs)

    def __getattr__(self, name):
        return getattr(self.real, name)


def test_a_file_larger_than_the_part_size_lands_in_parts_with_the_tenant_key_once(lake, env, tmp_path, capsys,
                                                                                  monkeypatch):
    big = _csv(tmp_path / "inbox" / "big.csv", 11 * MiB)
    monkeypatch.setattr(land, "PROGRESS_EVERY_S", 0.0)  # a progress line per part
    argv = ["land", *lake["args"], "--dataset", "readings", "--part-size-mib", "5", str(big)]
    assert cli.main(argv) == 0
    out, err = capsys.readouterr()
    key = _key(big)
    assert f"[land readings] [1/1] {big}: uploading 11.5 MB in 3 parts of 5 MiB (multipart upload)" in err
    assert f"[land readings] [1/1] {big}: 5.2 MB of 11.5 MB sent (45%, 1/3 parts, " in err
    assert f"[land readings] [1/1] {big}: 10.5 MB of 11.5 MB sent (90%, 2/3 parts, " in err
    assert f"[land readings] [1/1] landed {big} -> {key} (11.5 MB, 3 parts of 5 MiB)" in err
    assert "land readings: landed 1 file(s) (11.5 MB)" in out
    head = lake["s3"].head_object(Bucket=lake["bucket"], Key=key)
    assert (head["ServerSideEncryption"], head["SSEKMSKeyId"]) == ("aws:kms", lake["key_arn"])
    assert head["ETag"].strip('"').endswith("-3")  # a multipart object of three parts
    assert head["Metadata"] == {"source-name": "big.csv", "sha256": key.split("/")[-1].split(".")[0]}
    assert lake["s3"].get_object(Bucket=lake["bucket"], Key=key)["Body"].read() == big.read_bytes()
    assert _uploads(lake) == []

    # Landing it again writes nothing: the caller may read, so the object is seen and no part is sent.
    assert cli.main(argv) == 0
    out, err = capsys.readouterr()
    assert "1 file(s) already landed (same content), not written again" in out
    assert f"[1/1] already landed {big} -> {key} (11.5 MB)" in err and "uploading" not in err
    assert len(_versions(lake, key)) == 1


def test_a_caller_that_may_not_read_sends_the_parts_and_the_conditional_completion_writes_nothing(lake, env,
                                                                                                  tmp_path):
    """The ingest-writer's case (no s3:GetObject, so the object cannot be looked at first): the completion carries
    If-None-Match: *, the emulator answers 412 as S3 does, and the upload it leaves is aborted."""
    big = _csv(tmp_path / "big.csv", 11 * MiB, salt="w")
    client = _Client(lake["s3"], head_denied=True)
    first = land.land(lake["config"], CONTRACT, [str(big)], client=client, part_size=5 * MiB)
    again = land.land(lake["config"], CONTRACT, [str(big)], client=client, part_size=5 * MiB)
    assert (len(first.landed), len(first.already), len(again.landed), len(again.already)) == (1, 0, 0, 1)
    assert client.parts_sent == 6  # three parts each time: only the completion could refuse the second
    assert len(_versions(lake, _key(big))) == 1 and _uploads(lake) == []


@pytest.mark.parametrize("fault, raised", [
    (EndpointConnectionError(endpoint_url="https://s3.example"), land.LandError),  # the network fails mid-upload
    (KeyboardInterrupt(), KeyboardInterrupt),                                      # Ctrl-C
])
def test_an_upload_that_fails_after_two_parts_leaves_no_object_and_no_parts(lake, env, tmp_path, fault, raised):
    big = _csv(tmp_path / "big.csv", 11 * MiB, salt=type(fault).__name__)
    client = _Client(lake["s3"], fail_part=3, fault=fault)
    with pytest.raises(raised) as caught:
        land.land(lake["config"], CONTRACT, [str(big)], client=client, part_size=5 * MiB)
    if raised is land.LandError:
        assert caught.value.exit_code == land.EXIT_FAILED and str(caught.value).startswith("land: cannot reach S3")
    assert client.parts_on_server_at_fault == [1, 2]  # parts were there to abort
    assert _versions(lake, _key(big)) == [] and _uploads(lake) == []


DRIVER = """
import os, signal, sys, time
from spark_jobs import cli
from spark_jobs.landing import land

chunks = land._verified_chunks
def verified_chunks(check, size):
    for number, chunk in enumerate(chunks(check, size), 1):
        if number == 3:  # two parts went up: SIGTERM, as a supervisor or `kill` sends it
            os.kill(os.getpid(), signal.SIGTERM)
            time.sleep(30)
        yield chunk
land._verified_chunks = verified_chunks
sys.exit(cli.main(sys.argv[1:]))
"""


def test_sigterm_during_a_multipart_upload_aborts_it_and_exits_143(lake, env, tmp_path):
    big = _csv(tmp_path / "big.csv", 11 * MiB, salt="sigterm")
    done = subprocess.run([sys.executable, "-c", DRIVER, "land", *lake["args"], "--dataset", "readings",
                           "--part-size-mib", "5", str(big)], cwd=REPO_ROOT, capture_output=True, text=True,
                          env={**os.environ, **env, "PYTHONPATH": str(REPO_ROOT)}, timeout=120)
    assert done.returncode == 143, done.stderr
    assert done.stderr.splitlines()[-1] == (
        "error: land readings: interrupted (SIGTERM); the file under way was not landed and its upload was aborted, "
        "the files reported landed above are whole: run the same command again to land the rest")
    assert _versions(lake, _key(big)) == [] and _uploads(lake) == []


def test_a_big_file_is_copied_whole_into_a_folder_lake_in_chunks(tmp_path, env, capsys, monkeypatch):
    big = _csv(tmp_path / "big.csv", land.COPY_CHUNK * 2 + 12345)
    monkeypatch.setattr(land, "PROGRESS_EVERY_S", 0.0)
    lake_dir = tmp_path / "lake"
    assert cli.main(["land", "--lake-uri", str(lake_dir), "--dataset", "readings", str(big)]) == 0
    err = capsys.readouterr().err
    assert f"[1/1] {big}: 8.4 MB of 16.8 MB copied (49%, " in err
    assert sorted(p.name for p in (lake_dir / "landing" / "readings").iterdir()) == [_key(big).split("/")[-1]]
    assert (lake_dir / _key(big)).read_bytes() == big.read_bytes()


def test_a_file_that_changed_since_its_check_is_not_landed_and_leaves_no_temporary_file(tmp_path):
    good = _csv(tmp_path / "a.csv", 1000)
    check = check_file(good, CONTRACT)
    changed = bytearray(good.read_bytes())
    changed[-3] = ord("7") if changed[-3] != ord("7") else ord("8")  # same size, another digit
    good.write_bytes(bytes(changed))
    store = land._FolderStore(LakeConfig(lake_uri=str(tmp_path / "lake")))
    with pytest.raises(land.LandError, match="changed while it was being landed"):
        store.put(check, f"landing/readings/{check.sha256}.csv", land._Progress(None, "", check.size))
    assert list((tmp_path / "lake" / "landing" / "readings").iterdir()) == []


def test_part_sizes_keep_every_file_within_10000_parts():
    assert land.part_size_for(10**9, 64 * MiB) == 64 * MiB
    largest = land.MAX_OBJECT_BYTES
    part = land.part_size_for(largest, 64 * MiB)
    assert part == 525 * MiB and -(-largest // part) <= land.MAX_PARTS and part <= land.MAX_PART_BYTES


def test_a_part_size_s3_does_not_take_is_refused(tmp_path, env, capsys):
    code = cli.main(["land", "--lake-uri", str(tmp_path / "lake"), "--dataset", "readings", "--part-size-mib", "4",
                     str(_csv(tmp_path / "a.csv", 100))])
    assert code == 2
    assert capsys.readouterr().err.splitlines() == [
        "error: land readings: --part-size-mib 4 is outside S3's part sizes (5 to 5120 MiB); nothing was landed"]
