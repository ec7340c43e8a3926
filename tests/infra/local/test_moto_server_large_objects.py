"""infra/local/moto_server.py with large objects: a multipart upload completed block by block, aws-chunked bodies
decoded in one pass, and a large body's copies freed after its request. Each answer is compared with stock
moto's (in-process ``mock_aws``, or its own decoder), so the corrections change memory and time, not answers.
Also pinned: moto 5.2.5 honours ``If-None-Match: *`` on ``CompleteMultipartUpload`` as S3 does, so ``land``'s
create-only multipart upload needs no correction of the emulator's."""
from __future__ import annotations

import hashlib
import os
import subprocess
import sys
import uuid
from pathlib import Path

import boto3
import pytest
from botocore.exceptions import ClientError

pytestmark = pytest.mark.integration
REGION = "eu-west-1"
MiB = 1024 * 1024
PARTS = (os.urandom(5 * MiB), os.urandom(5 * MiB), os.urandom(MiB // 2))  # S3's smallest part twice, then the last


def _bucket(s3) -> str:
    name = f"large-objects-{uuid.uuid4().hex[:8]}"
    s3.create_bucket(Bucket=name, CreateBucketConfiguration={"LocationConstraint": REGION})
    return name


def _upload(s3, bucket: str, key: str, parts, algorithm: str | None) -> dict:
    """A multipart upload of ``parts``, completed; returns what HEAD says plus the body read back."""
    extra = {"ChecksumAlgorithm": algorithm} if algorithm else {}
    upload = s3.create_multipart_upload(Bucket=bucket, Key=key, **extra)["UploadId"]
    sent = []
    for number, data in enumerate(parts, 1):
        answer = s3.upload_part(Bucket=bucket, Key=key, UploadId=upload, PartNumber=number, Body=data)
        sent.append({"PartNumber": number, "ETag": answer["ETag"],
                     **({f"Checksum{algorithm}": answer[f"Checksum{algorithm}"]} if algorithm else {})})
    s3.complete_multipart_upload(Bucket=bucket, Key=key, UploadId=upload, MultipartUpload={"Parts": sent})
    head = s3.head_object(Bucket=bucket, Key=key, ChecksumMode="ENABLED")
    body = s3.get_object(Bucket=bucket, Key=key)["Body"].read()
    return {"etag": head["ETag"], "length": head["ContentLength"], "checksum": head.get(f"Checksum{algorithm or 'CRC64NVME'}"),
            "sha256": hashlib.sha256(body).hexdigest()}


@pytest.mark.parametrize("algorithm", ["CRC32", None])  # per-part checksums (streamed); full-object (stock path)
def test_a_completed_multipart_upload_is_the_object_stock_moto_makes(boto_session, algorithm):
    from moto import mock_aws

    s3 = boto_session("s3")
    ours = _upload(s3, _bucket(s3), "k", PARTS, algorithm)
    with mock_aws():
        stock_s3 = boto3.client("s3", region_name=REGION)
        stock = _upload(stock_s3, _bucket(stock_s3), "k", PARTS, algorithm)
    assert ours == stock
    assert ours["sha256"] == hashlib.sha256(b"".join(PARTS)).hexdigest() and ours["etag"].endswith('-3"')


def test_a_completion_moto_refuses_is_refused_as_before(boto_session):
    """The streamed completion validates as moto does: a part below 5 MiB that is not the last, a wrong ETag."""
    s3 = boto_session("s3")
    bucket = _bucket(s3)
    upload = s3.create_multipart_upload(Bucket=bucket, Key="k", ChecksumAlgorithm="CRC32")["UploadId"]
    etags = [s3.upload_part(Bucket=bucket, Key="k", UploadId=upload, PartNumber=n, Body=data)["ETag"]
             for n, data in enumerate((PARTS[2], PARTS[0]), 1)]
    small_first = [{"PartNumber": n, "ETag": e} for n, e in enumerate(etags, 1)]
    with pytest.raises(ClientError, match="EntityTooSmall"):
        s3.complete_multipart_upload(Bucket=bucket, Key="k", UploadId=upload, MultipartUpload={"Parts": small_first})
    with pytest.raises(ClientError, match="InvalidPart"):
        s3.complete_multipart_upload(Bucket=bucket, Key="k", UploadId=upload,
                                     MultipartUpload={"Parts": [{"PartNumber": 1, "ETag": '"0" '}]})
    # Nothing was completed: the upload and its parts are still there, as on S3.
    assert [p["PartNumber"] for p in s3.list_parts(Bucket=bucket, Key="k", UploadId=upload)["Parts"]] == [1, 2]


def test_a_completion_with_if_none_match_on_a_taken_key_is_refused_412_and_leaves_the_upload(boto_session):
    """S3's conditional completion (what ``land`` relies on for create-only multipart uploads): moto 5.2.5 answers
    412 PreconditionFailed when the key exists, and keeps the upload in progress until it is aborted."""
    s3 = boto_session("s3")
    bucket = _bucket(s3)
    s3.put_object(Bucket=bucket, Key="k", Body=b"first")
    upload = s3.create_multipart_upload(Bucket=bucket, Key="k", ChecksumAlgorithm="CRC32")["UploadId"]
    part = s3.upload_part(Bucket=bucket, Key="k", UploadId=upload, PartNumber=1, Body=PARTS[2])
    with pytest.raises(ClientError) as refused:
        s3.complete_multipart_upload(Bucket=bucket, Key="k", UploadId=upload, IfNoneMatch="*", MultipartUpload={
            "Parts": [{"PartNumber": 1, "ETag": part["ETag"], "ChecksumCRC32": part["ChecksumCRC32"]}]})
    assert (refused.value.response["Error"]["Code"], refused.value.response["ResponseMetadata"]["HTTPStatusCode"]) == \
        ("PreconditionFailed", 412)
    assert s3.get_object(Bucket=bucket, Key="k")["Body"].read() == b"first"
    assert [u["UploadId"] for u in s3.list_multipart_uploads(Bucket=bucket)["Uploads"]] == [upload]
    s3.abort_multipart_upload(Bucket=bucket, Key="k", UploadId=upload)
    assert "Uploads" not in s3.list_multipart_uploads(Bucket=bucket)


def test_an_aws_chunked_body_decodes_as_stock_moto_decodes_it(boto_session):
    """boto3's default CRC32 sends ``aws-chunked`` bodies (1 MiB chunks); the one-pass decoder gives stock moto's
    bytes, here and on a body of many small chunks (run in a process of its own: it is installed on moto's class)."""
    s3 = boto_session("s3")
    bucket = _bucket(s3)
    body = os.urandom(3 * MiB + 123)
    s3.put_object(Bucket=bucket, Key="chunked", Body=body)
    assert s3.get_object(Bucket=bucket, Key="chunked")["Body"].read() == body
    probe = (
        "import os\n"
        "from moto.s3.responses import S3Response\n"
        "from infra.local.moto_server import _decode_aws_chunked_bodies_in_one_pass\n"
        "data = [os.urandom(n) for n in (1, 4096, 65536, 7, 1 << 20)] * 20\n"
        "body = b''.join(b'%x\\r\\n%s\\r\\n' % (len(d), d) for d in data) + b'0\\r\\nx-amz-checksum-crc32:AAAAAA==\\r\\n\\r\\n'\n"
        "stock = S3Response._handle_encoded_body(None, body)\n"
        "_decode_aws_chunked_bodies_in_one_pass()\n"
        "ours = S3Response._handle_encoded_body(None, body)\n"
        "assert ours == stock == b''.join(data), (len(ours), len(stock))\n"
        "assert S3Response._handle_encoded_body(None, b'') == b''\n")
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, timeout=120,
                          cwd=Path(__file__).resolve().parents[3])
    assert done.returncode == 0, done.stderr[-2000:]


def _memory_mb(pid: int) -> dict[str, float]:
    """The process's resident memory (``VmRSS``) and its peak since the last reset (``VmHWM``), in MB."""
    fields = dict(line.split(":", 1) for line in Path(f"/proc/{pid}/status").read_text().splitlines())
    return {name: int(fields[name].split()[0]) / 1024 for name in ("VmRSS", "VmHWM")}


def test_a_large_upload_neither_piles_up_request_copies_nor_doubles_at_completion(emulator, boto_session):
    """Seven 36 MiB parts (each over glibc's 32 MiB mmap threshold, so freed memory goes back to the system).
    Moto leaves each request's copies of its body in reference cycles: without a collection after each large
    request the emulator kept about the parts' size until Python's cyclic collector happened to run (126 MB more
    over six parts). Stock completion then holds the whole object twice (about 500 MB here); streamed, its peak
    stays within a block or two (the peak is reset first: ``clear_refs``)."""
    s3 = boto_session("s3")
    bucket = _bucket(s3)
    upload = s3.create_multipart_upload(Bucket=bucket, Key="k", ChecksumAlgorithm="CRC32")["UploadId"]
    part = os.urandom(36 * MiB)
    sent = []
    for number in range(1, 8):
        answer = s3.upload_part(Bucket=bucket, Key="k", UploadId=upload, PartNumber=number, Body=part)
        sent.append({"PartNumber": number, "ETag": answer["ETag"], "ChecksumCRC32": answer["ChecksumCRC32"]})
        if number == 1:  # the first part sets the level
            before = _memory_mb(emulator.pid)["VmRSS"]
    piled = _memory_mb(emulator.pid)["VmRSS"] - before
    assert piled < 1.5 * 36, f"the emulator grew by {piled:.0f} MB over six 36 MiB parts"
    Path(f"/proc/{emulator.pid}/clear_refs").write_text("5")  # VmHWM := VmRSS
    s3.complete_multipart_upload(Bucket=bucket, Key="k", UploadId=upload, MultipartUpload={"Parts": sent})
    peak = _memory_mb(emulator.pid)["VmHWM"] - before
    assert s3.head_object(Bucket=bucket, Key="k")["ContentLength"] == 7 * 36 * MiB
    s3.delete_object(Bucket=bucket, Key="k")
    assert peak < 2 * 36, f"completing a 252 MiB upload took the emulator {peak:.0f} MB above its level"
