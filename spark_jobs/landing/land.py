"""``python -m spark_jobs land --tenant T --dataset D PATH...``: upload local files into ``landing/<D>/``.

1. Collects the files: each PATH that is a file, and under each folder (recursively) the files whose
   names fit the dataset's landing format (``*.csv``, ``*.csv.gz``, ``*.tsv``, ``*.txt`` for csv;
   ``*.parquet``; ``*.json*`` for the JSON formats); hidden files (``.x``, ``_x``) are skipped.
2. Checks every file against the contract's landing format (``spark_jobs/landing/files.py``) and, if any
   is not that format, refuses the whole batch with one line per bad file, before anything is uploaded.
3. Uploads each file as ``landing/<D>/<sha256 of its bytes>.<ext>`` (``.gz`` kept for gzip files),
   SSE-KMS with the tenant key, with a conditional put (``If-None-Match: *``) so that landing the same
   content again, under any name, writes nothing and bronze reads it once. A file larger than the part
   size (``--part-size-mib``, 64 by default) goes up as a multipart upload whose completion carries the
   same condition; an upload that fails or is interrupted (Ctrl-C, SIGTERM) is aborted, so neither an
   object nor orphan parts stay behind. The original file name is kept in the object's metadata
   (``x-amz-meta-source-name``). A progress line per file goes to stderr, and for a long upload one at
   most every ``PROGRESS_EVERY_S`` seconds.
4. Prints what it landed and the command to run next.

Credentials: the standard AWS chain. Locally (``TENANTLAKE_ENV=local``, the default) the emulator's
(``eval "$(python -m infra.local.emulator env)"``); on AWS (``TENANTLAKE_ENV=aws``) the caller's, which
should be the tenant's ingest-writer role: it may only put under ``landing/`` with the tenant key, which
is all ``land`` needs (no read, no list). ``python -m spark_jobs creds --tenant T --prefix landing/<D>
--format env`` vends such credentials. A local-folder lake (``--lake-uri /path``) gets a plain copy.
"""
from __future__ import annotations

import argparse
import contextlib
import dataclasses
import hashlib
import os
import signal
import sys
import tempfile
import threading
import time
from pathlib import Path
from urllib.parse import urlparse

from spark_jobs.contract.model import Contract, load_contract
from spark_jobs.io.landing import is_landing_file
from spark_jobs.io.s3 import aws_client, lake_client
from spark_jobs.lake.config import LakeConfig, lake_from_args, lake_selection
from spark_jobs.landing.files import FileCheck, check_file

ENV_VAR = "TENANTLAKE_ENV"
EXIT_OK, EXIT_FAILED, EXIT_REFUSED = 0, 1, 2
MiB = 1024 ** 2
# S3's limits (https://docs.aws.amazon.com/AmazonS3/latest/userguide/qfacts.html): a part is 5 MiB to 5 GiB
# (the last may be smaller), an upload has at most 10,000 parts, an object at most 5 TiB.
MIN_PART_BYTES = 5 * MiB
MAX_PART_BYTES = 5 * 1024 ** 3
MAX_PARTS = 10_000
MAX_OBJECT_BYTES = 5 * 1024 ** 4
# Files larger than this go up in parts of this size (64 MiB: 16 requests for 1 GiB, 625 GiB before the
# 10,000-part limit makes parts larger; one part is held in memory at a time).
DEFAULT_PART_MIB = 64
PROGRESS_EVERY_S = 5.0   # at most one progress line per file this often
COPY_CHUNK = 8 * MiB     # a local-folder lake copies (and hashes) in chunks of this size


class LandError(RuntimeError):
    """Landing stopped; ``str(err)`` is one line (several for a refused batch: one per bad file).
    ``exit_code``: 2 when the input was refused (nothing uploaded), 1 when an upload failed."""

    def __init__(self, message: str, exit_code: int = EXIT_FAILED):
        super().__init__(message)
        self.exit_code = exit_code


@dataclasses.dataclass
class LandResult:
    landed: list[tuple[FileCheck, str]] = dataclasses.field(default_factory=list)       # (file, object key)
    already: list[tuple[FileCheck, str]] = dataclasses.field(default_factory=list)      # same content was there
    duplicates: list[FileCheck] = dataclasses.field(default_factory=list)               # same content twice in PATHs
    empty: list[Path] = dataclasses.field(default_factory=list)
    skipped: list[Path] = dataclasses.field(default_factory=list)                       # other files in folders


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("paths", nargs="+", metavar="PATH", help="files or folders to land")
    parser.add_argument("--dataset", required=True, help="the dataset (a contract name)")
    parser.add_argument("--dry-run", action="store_true", help="check the files and show the object names; upload nothing")
    parser.add_argument("--part-size-mib", type=int, default=DEFAULT_PART_MIB, metavar="MIB",
                        help=f"files larger than this go up as a multipart upload in parts of this size, 5 to 5120 "
                             f"(larger when a file would need more than {MAX_PARTS:,} parts; default: {DEFAULT_PART_MIB})")


def collect_files(paths: list[str], landing_format: str) -> tuple[list[Path], list[Path], list[str]]:
    """(files to check, files skipped in folders, paths that do not exist)."""
    files, skipped, missing = [], [], []
    for text in paths:
        path = Path(text)
        if path.is_file():
            files.append(path)
        elif path.is_dir():
            for found in sorted(p for p in path.rglob("*") if p.is_file()):
                hidden = any(part.startswith((".", "_")) for part in found.relative_to(path).parts)
                if hidden:
                    continue
                (files if is_landing_file(found.name, landing_format) else skipped).append(found)
        else:
            missing.append(text)
    return files, skipped, missing


def check_files(files: list[Path], contract: Contract, progress=None) -> list[FileCheck]:
    if progress and files:
        progress(f"checking {len(files)} file(s) against the {contract.dataset} contract ({contract.landing_format})")
    return [check_file(path, contract) for path in files]


def part_size_for(size: int, wanted: int) -> int:
    """The part size for a file of ``size`` bytes: ``wanted``, or the smallest whole number of MiB that keeps
    the upload within S3's 10,000 parts (525 MiB for a 5 TiB file)."""
    fits = -(-size // MAX_PARTS)
    return max(wanted, -(-fits // MiB) * MiB)


def land(lake: LakeConfig, contract: Contract, paths: list[str], *, dry_run: bool = False,
         progress=None, client=None, part_size: int = DEFAULT_PART_MIB * MiB) -> LandResult:
    """Check, then upload. Raises ``LandError`` (nothing uploaded) when a path or file is refused.

    Files larger than ``part_size`` bytes go up as multipart uploads (object stores); an upload that fails or
    is interrupted (``KeyboardInterrupt``, which ``run`` also raises on SIGTERM) is aborted before the
    exception goes on, so no object and no parts of it stay behind."""
    if not MIN_PART_BYTES <= part_size <= MAX_PART_BYTES:
        raise LandError(f"land {contract.dataset}: --part-size-mib {part_size / MiB:g} is outside S3's part sizes "
                        f"({MIN_PART_BYTES // MiB} to {MAX_PART_BYTES // MiB} MiB); nothing was landed", EXIT_REFUSED)
    files, skipped, missing = collect_files(paths, contract.landing_format)
    problems = [f"land {contract.dataset}: {text}: no such file or folder" for text in missing]
    checks = check_files(files, contract, progress)
    result = LandResult(skipped=skipped)
    for check in checks:
        if check.problem:
            problems.append(f"land {contract.dataset}: {check.path} {check.problem}")
        elif check.size > MAX_OBJECT_BYTES and lake.is_object_store:
            problems.append(f"land {contract.dataset}: {check.path} is larger than 5 TiB (S3's limit for one object); "
                            "split it into several files")
    if problems:
        raise LandError("\n".join(problems + [f"land {contract.dataset}: nothing was landed "
                                              f"({len(problems)} of {len(files) + len(missing)} refused)"]), EXIT_REFUSED)
    if not files:
        raise LandError(f"land {contract.dataset}: no {contract.landing_format} files under {', '.join(paths)}"
                        + (f" ({len(skipped)} other files skipped)" if skipped else ""), EXIT_REFUSED)
    seen: set[str] = set()
    uploads = []
    for check in checks:
        if check.size == 0:
            result.empty.append(check.path)
        elif check.sha256 in seen:
            result.duplicates.append(check)
        else:
            seen.add(check.sha256)
            uploads.append(check)
    store = _ObjectStore(lake, client, part_size) if lake.is_object_store else _FolderStore(lake)
    for index, check in enumerate(uploads, 1):
        key = f"landing/{contract.dataset}/{check.object_name(contract.landing_format)}"
        label = f"[{index}/{len(uploads)}]"
        if dry_run:
            wrote = True
        else:
            wrote = store.put(check, key, _Progress(progress, f"{label} {check.path}", check.size))
        (result.landed if wrote else result.already).append((check, key))
        if progress:
            verb = "would land" if dry_run else ("landed" if wrote else "already landed")
            how = store.how(check.size) if wrote else ""
            progress(f"{label} {verb} {check.path} -> {key} ({_size(check.size)}{how})")
    return result


class _Progress:
    """Progress of one file's upload or copy: at most one line every ``PROGRESS_EVERY_S`` seconds."""

    def __init__(self, progress, label: str, total: int):
        self.progress, self.label, self.total = progress, label, total
        self.started = self.last = time.monotonic()

    def say(self, line: str) -> None:
        if self.progress:
            self.progress(f"{self.label}: {line}")

    def update(self, done: int, verb: str, parts: str = "") -> None:
        now = time.monotonic()
        if not self.progress or now - self.last < PROGRESS_EVERY_S:
            return
        self.last = now
        rate = done / max(now - self.started, 1e-6)
        self.say(f"{_size(done)} of {_size(self.total)} {verb} ({100 * done // self.total}%{parts}, {_size(rate)}/s)")


def _verified_chunks(check: FileCheck, chunk_size: int):
    """The file's bytes in chunks of ``chunk_size``, read once; after the last, ``LandError`` if they are not the
    bytes that were checked (the object is named by their SHA-256: a file changed since must not land under it)."""
    digest, size = hashlib.sha256(), 0
    try:
        with check.path.open("rb") as handle:
            while chunk := handle.read(chunk_size):
                digest.update(chunk)
                size += len(chunk)
                yield chunk  # an exception of the consumer's does not come back in here (only GeneratorExit)
    except OSError as exc:
        raise LandError(f"land: cannot read {check.path} ({exc.strerror or exc}); it was not landed") from None
    if (digest.hexdigest(), size) != (check.sha256, check.size):
        raise LandError(f"land: {check.path} changed while it was being landed (its size or SHA-256 differs from "
                        "the checked file's); it was not landed: run the same command again once it is complete")


class _ObjectStore:
    """S3 (or the emulator): a conditional, SSE-KMS put per file, or a multipart upload for a large one."""

    def __init__(self, lake: LakeConfig, client=None, part_size: int = DEFAULT_PART_MIB * MiB):
        self.lake = lake
        self.part_size = part_size
        self.client = client or lake_client(lake, fresh_session=True)
        self.encryption = ({"ServerSideEncryption": "aws:kms", "SSEKMSKeyId": lake.kms_key_arn}
                           if lake.kms_key_arn else {})

    def how(self, size: int) -> str:
        if size <= self.part_size:
            return ""
        part = part_size_for(size, self.part_size)
        return f", {-(-size // part)} parts of {part // MiB} MiB"

    def put(self, check: FileCheck, key: str, report: _Progress) -> bool:
        """True when written, False when an object of that name (hence that content) was there already."""
        with _s3_errors(self.lake, key):
            metadata = {"source-name": _ascii(check.path.name), "sha256": check.sha256}
            if check.size > self.part_size:
                return self._put_in_parts(check, key, metadata, report)
            body = b"".join(_verified_chunks(check, check.size))
            try:
                self.client.put_object(Bucket=self.lake.bucket, Key=key, Body=body, IfNoneMatch="*",
                                       Metadata=metadata, **self.encryption)
            except Exception as exc:  # noqa: BLE001 - _s3_errors says what it was
                if _already_there(exc):
                    return False
                raise
            return True

    def _put_in_parts(self, check: FileCheck, key: str, metadata: dict[str, str], report: _Progress) -> bool:
        if self._exists(key):  # saves sending the parts; the conditional completion decides in any case
            return False
        part_size = part_size_for(check.size, self.part_size)
        count = -(-check.size // part_size)
        bucket = self.lake.bucket
        upload_id = self.client.create_multipart_upload(Bucket=bucket, Key=key, Metadata=metadata,
                                                        ChecksumAlgorithm="CRC32", **self.encryption)["UploadId"]
        report.say(f"uploading {_size(check.size)} in {count} parts of {part_size // MiB} MiB (multipart upload)")
        try:
            parts, sent = [], 0
            for number, chunk in enumerate(_verified_chunks(check, part_size), 1):
                answer = self.client.upload_part(Bucket=bucket, Key=key, UploadId=upload_id, PartNumber=number,
                                                 Body=chunk)
                parts.append({"PartNumber": number, "ETag": answer["ETag"],
                              **({"ChecksumCRC32": answer["ChecksumCRC32"]} if answer.get("ChecksumCRC32") else {})})
                sent += len(chunk)
                report.update(sent, "sent", f", {number}/{count} parts")
            self.client.complete_multipart_upload(Bucket=bucket, Key=key, UploadId=upload_id, IfNoneMatch="*",
                                                  MultipartUpload={"Parts": parts})
        except BaseException as exc:  # an error, Ctrl-C or SIGTERM: no parts may stay behind
            self._abort(key, upload_id, report)
            if _already_there(exc):  # S3 keeps the upload after a failed condition: aborted above
                return False
            raise
        return True

    def _exists(self, key: str) -> bool:
        """Whether the object is there, if the caller may ask (the ingest-writer role may not: 403, so no)."""
        from botocore.exceptions import ClientError

        try:
            self.client.head_object(Bucket=self.lake.bucket, Key=key)
        except ClientError:
            return False
        return True

    def _abort(self, key: str, upload_id: str, report: _Progress) -> None:
        try:
            self.client.abort_multipart_upload(Bucket=self.lake.bucket, Key=key, UploadId=upload_id)
        except BaseException as exc:  # noqa: BLE001 - a second Ctrl-C included: say what stays, then go on
            if getattr(exc, "response", {}).get("Error", {}).get("Code") == "NoSuchUpload":
                return  # gone already: completed (its answer lost on the way) or aborted
            report.say(f"could not abort multipart upload {upload_id} ({_first_line(exc) or type(exc).__name__}): "
                       "its parts stay until the bucket's lifecycle rule aborts it, or: aws s3api "
                       f"abort-multipart-upload --bucket {self.lake.bucket} --key {key} --upload-id {upload_id}")


def _already_there(exc: BaseException) -> bool:
    """A conditional write that found the key taken (412), or lost a race for it to another writer (409)."""
    from botocore.exceptions import ClientError

    return isinstance(exc, ClientError) and exc.response.get("Error", {}).get("Code", "") in (
        "PreconditionFailed", "ConditionalRequestConflict", "412")


@contextlib.contextmanager
def _s3_errors(lake: LakeConfig, key: str):
    """Turns what S3 (or reaching it) raises into one ``LandError`` line."""
    from botocore.exceptions import ClientError, NoCredentialsError

    try:
        yield
    except LandError:
        raise
    except NoCredentialsError:
        raise LandError(f"land: no AWS credentials; {_credentials_hint(lake, key)}") from None
    except ClientError as exc:
        code = exc.response.get("Error", {}).get("Code", "")
        message = exc.response.get("Error", {}).get("Message", str(exc))
        operation = getattr(exc, "operation_name", "") or "put"
        if code in ("AccessDenied", "403", "InvalidAccessKeyId", "SignatureDoesNotMatch", "ExpiredToken"):
            raise LandError(f"land: {operation} of s3://{lake.bucket}/{key} denied ({code}: {message}); "
                            f"{_credentials_hint(lake, key)}") from None
        raise LandError(f"land: {operation} of s3://{lake.bucket}/{key} failed ({code}: {message})") from None
    except Exception as exc:  # noqa: BLE001 - endpoint down, TLS: one line
        raise LandError(f"land: cannot reach S3 ({lake.s3_endpoint or 'AWS'}): {_first_line(exc)}") from None


class _FolderStore:
    """A local-folder lake: copy under a hidden temporary name, then rename (the reader never sees half a file)."""

    def __init__(self, lake: LakeConfig):
        parsed = urlparse(lake.lake_uri)
        self.root = Path(parsed.path if parsed.scheme == "file" else lake.lake_uri)

    def how(self, size: int) -> str:  # noqa: ARG002 - one copy whatever the size
        return ""

    def put(self, check: FileCheck, key: str, report: _Progress) -> bool:
        target = self.root / key
        if target.exists():
            return False
        target.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(dir=target.parent, prefix=f".{target.name}.")
        try:
            with os.fdopen(fd, "wb") as out:
                copied = 0
                for chunk in _verified_chunks(check, COPY_CHUNK):
                    out.write(chunk)
                    copied += len(chunk)
                    report.update(copied, "copied")
            os.replace(tmp, target)
        except BaseException as exc:  # an error, Ctrl-C or SIGTERM: no temporary file stays behind
            Path(tmp).unlink(missing_ok=True)
            if isinstance(exc, OSError):
                raise LandError(f"land: cannot write {target} ({exc.strerror or exc}); {check.path} was not "
                                "landed") from None
            raise
        return True


def _credentials_hint(lake: LakeConfig, key: str) -> str:
    dataset_prefix = key.rsplit("/", 1)[0]
    if os.environ.get(ENV_VAR, "local") == "aws":
        return (f"land needs s3:PutObject on {dataset_prefix}/ and the tenant key: the tenant's ingest-writer "
                f"role, e.g. eval \"$(python -m spark_jobs creds --tenant <T> --prefix {dataset_prefix} --format env)\"")
    return "locally: eval \"$(.venv/bin/python -m infra.local.emulator env)\" (the emulator's credentials)"


def _first_line(exc: BaseException) -> str:
    return (str(exc).splitlines() or [""])[0]


def _ascii(text: str) -> str:
    """S3 user metadata travels in HTTP headers: keep it ASCII."""
    return text.encode("ascii", "replace").decode("ascii")


def _size(n: int) -> str:
    for unit in ("B", "kB", "MB", "GB"):
        if n < 1000 or unit == "GB":
            return f"{n:.0f} {unit}" if unit == "B" else f"{n:.1f} {unit}"
        n /= 1000
    return f"{n} B"


def caller_line(lake: LakeConfig) -> str | None:
    """On AWS, who is landing (an ingest-writer session is what the platform expects)."""
    if os.environ.get(ENV_VAR, "local") != "aws":
        return None
    try:  # the region alone: STS is AWS's own here, whatever endpoint the lake's S3 is reached through
        arn = aws_client("sts", region=lake.region, fresh_session=True).get_caller_identity()["Arn"]
    except Exception as exc:  # noqa: BLE001 - shown, not fatal: the put says whether it may
        return f"land: caller unknown ({_first_line(exc)})"
    role_hint = "" if "ingest-writer" in arn else " (not an ingest-writer role session: puts may be denied)"
    return f"land: as {arn}{role_hint}"


def summary(contract: Contract, lake: LakeConfig, result: LandResult, lake_options: str, dry_run: bool) -> str:
    where = lake.landing(contract.dataset)
    total = sum(c.size for c, _ in result.landed)
    verb = "would land" if dry_run else "landed"
    lines = [f"land {contract.dataset}: {verb} {len(result.landed)} file(s) ({_size(total)}) -> {where}/"]
    if result.already:
        lines.append(f"land {contract.dataset}: {len(result.already)} file(s) already landed (same content), not written again")
    if result.duplicates:
        lines.append(f"land {contract.dataset}: {len(result.duplicates)} file(s) repeat another's content: landed once")
    if result.empty:
        lines.append(f"land {contract.dataset}: {len(result.empty)} empty file(s) skipped")
    if result.skipped:
        names = ", ".join(str(p) for p in result.skipped[:5]) + (", ..." if len(result.skipped) > 5 else "")
        lines.append(f"land {contract.dataset}: {len(result.skipped)} file(s) in the folders are not "
                     f"{contract.landing_format} by name, not landed: {names}")
    if not dry_run:
        lines.append(f"next: python -m spark_jobs run-all {lake_options} --dataset {contract.dataset}".replace("  ", " "))
    return "\n".join(lines)


class Interrupted(KeyboardInterrupt):
    """SIGTERM while landing, raised like Ctrl-C's ``KeyboardInterrupt`` so that an upload under way is aborted."""

    def __init__(self, signum: int):
        super().__init__(signal.Signals(signum).name)
        self.signum = signum


@contextlib.contextmanager
def _sigterm_interrupts():
    """SIGTERM raises ``Interrupted`` (Python's default would end the process without aborting the upload)."""
    if threading.current_thread() is not threading.main_thread():  # only the main thread may set handlers
        yield
        return

    def interrupt(signum, frame):  # noqa: ARG001 - signal handler signature
        raise Interrupted(signum)

    previous = signal.signal(signal.SIGTERM, interrupt)
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, previous)


def run(args: argparse.Namespace) -> int:
    """The CLI command, with the options ``spark_jobs.cli`` parsed (the contract, then the lake: a bad one raises
    ``ContractError``/``LakeConfigError``). Exit codes: 0 landed, 1 an upload failed, 2 refused, 128 + the
    signal's number when interrupted (130 Ctrl-C, 143 SIGTERM)."""
    contract = load_contract(args.dataset)
    lake = lake_from_args(args)

    def progress(line: str) -> None:
        print(f"[land {contract.dataset}] {line}", file=sys.stderr, flush=True)

    who = caller_line(lake)
    if who:
        print(who, file=sys.stderr)
    try:
        with _sigterm_interrupts():
            result = land(lake, contract, args.paths, dry_run=args.dry_run, progress=progress,
                          part_size=args.part_size_mib * MiB)
    except LandError as exc:
        print("\n".join(f"error: {line}" for line in str(exc).splitlines()), file=sys.stderr)
        return exc.exit_code
    except KeyboardInterrupt as exc:
        signum = getattr(exc, "signum", signal.SIGINT)
        print(f"error: land {contract.dataset}: interrupted ({signal.Signals(signum).name}); the file under way was "
              "not landed and its upload was aborted, the files reported landed above are whole: run the same "
              "command again to land the rest", file=sys.stderr)
        return 128 + signum
    print(summary(contract, lake, result, lake_selection(args), args.dry_run))
    return EXIT_OK
