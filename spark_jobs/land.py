"""``python -m spark_jobs land --tenant T --dataset D PATH...``: upload local files into ``landing/<D>/``.

1. Collects the files: each PATH that is a file, and under each folder (recursively) the files whose
   names fit the dataset's landing format (``*.csv``, ``*.csv.gz``, ``*.tsv``, ``*.txt`` for csv;
   ``*.parquet``; ``*.json*`` for the JSON formats); hidden files (``.x``, ``_x``) are skipped.
2. Checks every file against the contract's landing format (``spark_jobs/landing_files.py``) and, if any
   is not that format, refuses the whole batch with one line per bad file, before anything is uploaded.
3. Uploads each file as ``landing/<D>/<sha256 of its bytes>.<ext>`` (``.gz`` kept for gzip files),
   SSE-KMS with the tenant key, with a conditional put (``If-None-Match: *``) so that landing the same
   content again, under any name, writes nothing and bronze reads it once. The original file name is
   kept in the object's metadata (``x-amz-meta-source-name``). A progress line per file goes to stderr.
4. Prints what it landed and the command to run next.

Credentials: the standard AWS chain. Locally (``TENANTLAKE_ENV=local``, the default) the emulator's
(``eval "$(python -m infra.local.emulator env)"``); on AWS (``TENANTLAKE_ENV=aws``) the caller's, which
should be the tenant's ingest-writer role: it may only put under ``landing/`` with the tenant key, which
is all ``land`` needs (no read, no list). ``python -m spark_jobs creds --tenant T --prefix landing/<D>
--format env`` vends such credentials. A local-folder lake (``--lake-uri /path``) gets a plain copy.
"""
from __future__ import annotations

import argparse
import dataclasses
import os
import shutil
import sys
import tempfile
from pathlib import Path
from urllib.parse import urlparse

from spark_jobs.contract import Contract
from spark_jobs.io.landing import is_landing_file
from spark_jobs.lake import LakeConfig
from spark_jobs.landing_files import FileCheck, check_file

ENV_VAR = "TENANTLAKE_ENV"
MAX_PUT_BYTES = 5 * 1024 ** 3  # S3's limit for one PUT
EXIT_OK, EXIT_FAILED, EXIT_REFUSED = 0, 1, 2


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


def land(lake: LakeConfig, contract: Contract, paths: list[str], *, dry_run: bool = False,
         progress=None, client=None) -> LandResult:
    """Check, then upload. Raises ``LandError`` (nothing uploaded) when a path or file is refused."""
    files, skipped, missing = collect_files(paths, contract.landing_format)
    problems = [f"land {contract.dataset}: {text}: no such file or folder" for text in missing]
    checks = check_files(files, contract, progress)
    result = LandResult(skipped=skipped)
    for check in checks:
        if check.problem:
            problems.append(f"land {contract.dataset}: {check.path} {check.problem}")
        elif check.size > MAX_PUT_BYTES:
            problems.append(f"land {contract.dataset}: {check.path} is larger than 5 GiB (S3's limit for one PUT); "
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
    store = _ObjectStore(lake, client) if lake.is_object_store else _FolderStore(lake)
    for index, check in enumerate(uploads, 1):
        key = f"landing/{contract.dataset}/{check.object_name(contract.landing_format)}"
        if dry_run:
            wrote = True
        else:
            wrote = store.put(check, key)
        (result.landed if wrote else result.already).append((check, key))
        if progress:
            verb = "would land" if dry_run else ("landed" if wrote else "already landed")
            progress(f"[{index}/{len(uploads)}] {verb} {check.path} -> {key} ({_size(check.size)})")
    return result


class _ObjectStore:
    """S3 (or the emulator): a conditional, SSE-KMS put per file."""

    def __init__(self, lake: LakeConfig, client=None):
        import boto3

        self.lake = lake
        self.client = client or boto3.session.Session().client(
            "s3", region_name=lake.region, endpoint_url=lake.s3_endpoint or None, verify=lake.ca_bundle or None)

    def put(self, check: FileCheck, key: str) -> bool:
        """True when written, False when an object of that name (hence that content) was there already."""
        from botocore.exceptions import ClientError, NoCredentialsError

        extra = {"ServerSideEncryption": "aws:kms", "SSEKMSKeyId": self.lake.kms_key_arn} if self.lake.kms_key_arn else {}
        metadata = {"source-name": _ascii(check.path.name), "sha256": check.sha256}
        try:
            with check.path.open("rb") as body:
                self.client.put_object(Bucket=self.lake.bucket, Key=key, Body=body, IfNoneMatch="*",
                                       Metadata=metadata, **extra)
        except NoCredentialsError:
            raise LandError(f"land: no AWS credentials; {_credentials_hint(self.lake, key)}") from None
        except ClientError as exc:
            code = exc.response.get("Error", {}).get("Code", "")
            if code in ("PreconditionFailed", "ConditionalRequestConflict", "412"):
                return False
            message = exc.response.get("Error", {}).get("Message", str(exc))
            if code in ("AccessDenied", "403", "InvalidAccessKeyId", "SignatureDoesNotMatch", "ExpiredToken"):
                raise LandError(f"land: put of s3://{self.lake.bucket}/{key} denied ({code}: {message}); "
                                f"{_credentials_hint(self.lake, key)}") from None
            raise LandError(f"land: put of s3://{self.lake.bucket}/{key} failed ({code}: {message})") from None
        except Exception as exc:  # noqa: BLE001 - endpoint down, TLS: one line
            raise LandError(f"land: cannot reach S3 ({self.lake.s3_endpoint or 'AWS'}): "
                            f"{(str(exc).splitlines() or [''])[0]}") from None
        return True


class _FolderStore:
    """A local-folder lake: copy under a hidden temporary name, then rename (the reader never sees half a file)."""

    def __init__(self, lake: LakeConfig):
        parsed = urlparse(lake.lake_uri)
        self.root = Path(parsed.path if parsed.scheme == "file" else lake.lake_uri)

    def put(self, check: FileCheck, key: str) -> bool:
        target = self.root / key
        if target.exists():
            return False
        target.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(dir=target.parent, prefix=f".{target.name}.")
        os.close(fd)
        shutil.copyfile(check.path, tmp)
        os.replace(tmp, target)
        return True


def _credentials_hint(lake: LakeConfig, key: str) -> str:
    dataset_prefix = key.rsplit("/", 1)[0]
    if os.environ.get(ENV_VAR, "local") == "aws":
        return (f"land needs s3:PutObject on {dataset_prefix}/ and the tenant key: the tenant's ingest-writer "
                f"role, e.g. eval \"$(python -m spark_jobs creds --tenant <T> --prefix {dataset_prefix} --format env)\"")
    return "locally: eval \"$(.venv/bin/python -m infra.local.emulator env)\" (the emulator's credentials)"


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
    import boto3

    try:
        arn = boto3.session.Session().client("sts", region_name=lake.region).get_caller_identity()["Arn"]
    except Exception as exc:  # noqa: BLE001 - shown, not fatal: the put says whether it may
        return f"land: caller unknown ({(str(exc).splitlines() or [''])[0]})"
    role_hint = "" if "ingest-writer" in arn else " (not an ingest-writer role session: puts may be denied)"
    return f"land: as {arn}{role_hint}"


def summary(contract: Contract, lake: LakeConfig, result: LandResult, lake_selection: str, dry_run: bool) -> str:
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
        lines.append(f"next: python -m spark_jobs run-all {lake_selection} --dataset {contract.dataset}".replace("  ", " "))
    return "\n".join(lines)


def run(args: argparse.Namespace, lake: LakeConfig, contract: Contract, lake_selection: str) -> int:
    """The CLI command (``spark_jobs.cli`` resolves the lake and the contract first)."""
    def progress(line: str) -> None:
        print(f"[land {contract.dataset}] {line}", file=sys.stderr, flush=True)

    who = caller_line(lake)
    if who:
        print(who, file=sys.stderr)
    try:
        result = land(lake, contract, args.paths, dry_run=args.dry_run, progress=progress)
    except LandError as exc:
        print("\n".join(f"error: {line}" for line in str(exc).splitlines()), file=sys.stderr)
        return exc.exit_code
    print(summary(contract, lake, result, lake_selection, args.dry_run))
    return EXIT_OK
