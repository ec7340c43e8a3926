"""Who may write a dataset right now: pipeline and maintenance runs hold leases, an erasure request holds a lock.

- A **lease** guards one layer of one dataset: ``checkpoints/<ds>/runs/<layer>.lease`` (``bronze``, ``silver``,
  ``gold``). A run takes the leases of what it writes before it starts: ``run --layer L`` takes L's,
  ``run-all`` every layer's of its datasets (for the whole command, before its Spark session starts),
  ``maintain`` silver's and gold's (the tables it rewrites), an erase request's own catch-up bronze and gold
  runs bronze's and gold's. A lease is written **create-only** (S3 ``If-None-Match: *``; in a folder lake a
  hard link of a complete file, which fails when the name exists), so of two runs that race for one, exactly
  one gets it; the other stops at once with one line naming the holder (run id, command, process, since when)
  and changes nothing (``LeaseRefused``, exit 1).
- The holder rewrites its lease every ``LEASE_HEARTBEAT_SECONDS`` (a conditional write: S3 ``If-Match`` on
  the lease's ETag) and deletes it when the run ends, however it ends (conditionally too: a lease taken over
  is never deleted by its former holder). A lease is **stale**, and the next run takes it over (a
  conditional replace, so of two runs only one does, and says so in a progress line), when it has not been
  rewritten for ``LEASE_STALE_SECONDS`` by the store's own clock (S3's ``LastModified`` against the ``Date`` of
  S3's answer: no local clock is compared with S3's), or at once when its process is gone from the host the
  next run runs on, where a pid means the same process: the same host name, boot and pid namespace
  (``host_identity``; containers that share a host name but not their pids wait for the heartbeats). A
  lease without heartbeats (written by another tool) counts for ``LEASE_STALE_HOURS`` after its ``since``.
- **Fencing.** Before every commit (the bronze move of a batch, the quarantine write, each silver and gold
  table commit and schema change, a maintenance procedure, a recovered checkpoint) a run renews each lease
  the commit needs with the same conditional write (``fence``). A run whose lease was taken over (it was
  silent too long: a stalled driver) or cannot be renewed (expired credentials, throttling) stops there,
  before the commit, with one line (``LeaseLost``, exit 1); a renewal also restarts the stale clock, so a
  takeover cannot land between the fence and the commit unless the run stalls for ``LEASE_STALE_SECONDS``
  in that gap.
- The **erasure lock** (``checkpoints/<ds>/erasure.lock``) is written by an erase request, create-only and with
  a lease's heartbeat fields (``lock_text``, rewritten while the request runs), before it looks for leases,
  and a run looks for it after it has taken its leases. Because each side writes first and looks
  second, at least one of two racing runs sees the other: a run refuses while a request holds the lock, a
  request refuses while a live lease exists (``live_leases``).

The lease store speaks to S3 with boto3 (the jobs' credentials) or to a folder with ``os``: no Spark session
is needed, so the CLI refuses a busy dataset before its JVM starts (importing pyspark starts none).
"""
from __future__ import annotations

import contextlib
import dataclasses
import datetime as dt
import hashlib
import json
import os
import socket
import sys
import threading
from typing import Any, Callable, Iterator

from spark_jobs.io import create_only
from spark_jobs.lake.config import LakeConfig
from spark_jobs.lake.failures import JobFailed, check_endpoint

LEASE_LAYERS: tuple[str, ...] = ("bronze", "silver", "gold")
# Which layers' leases a maintenance run takes: the tables it rewrites.
MAINTAIN_LAYERS: tuple[str, ...] = ("silver", "gold")
LEASE_HEARTBEAT_SECONDS = 60
# A lease not rewritten for this long is a killed run's (ten missed heartbeats).
LEASE_STALE_SECONDS = 600
# A lease without heartbeats (another tool's) no longer counts after this long.
LEASE_STALE_HOURS = 24
_TIME = "%Y-%m-%dT%H:%M:%SZ"


class LeaseRefused(JobFailed):
    """A run may not start: another live run holds a lease it needs, or an erasure request holds the dataset.
    One line saying who and what to do (exit 1)."""

    def __init__(self, message: str):
        super().__init__(message, 1)


def lock_uri(lake: LakeConfig, dataset: str) -> str:
    return lake.path("checkpoints", dataset, "erasure.lock")


def _lock_key(dataset: str) -> str:
    return f"checkpoints/{dataset}/erasure.lock"


def _runs_prefix(dataset: str) -> str:
    return f"checkpoints/{dataset}/runs/"


def lease_key(dataset: str, layer: str) -> str:
    """The lease of one layer of a dataset, relative to the lake root."""
    return f"{_runs_prefix(dataset)}{layer}.lease"


# ---- the store: create-only, conditional replace and delete -------------------------------------------------
@dataclasses.dataclass(frozen=True)
class Stored:
    """An object as read: its text, the tag a conditional replace or delete must match (the S3 ETag, the
    digest of a file's bytes), when it was last written (S3's LastModified, a file's mtime; UTC) and the
    store's own time when it was read (the ``Date`` of S3's answer; a folder: this machine's clock, which
    stamped the mtime too), so a lease's silence is measured on one clock."""

    text: str
    tag: str
    modified: dt.datetime
    now: dt.datetime | None = None


def _response_time(response: dict[str, Any]) -> dt.datetime | None:
    """S3's clock when it answered: the HTTP ``Date`` header (None when missing or unreadable)."""
    from email.utils import parsedate_to_datetime

    text = (response.get("ResponseMetadata", {}).get("HTTPHeaders", {}) or {}).get("date")
    try:
        return parsedate_to_datetime(text).astimezone(dt.timezone.utc) if text else None
    except (TypeError, ValueError):
        return None


class _S3Store:
    """Lease objects in the lake's bucket: conditional PUTs and DELETEs (moto enforces them too)."""

    def __init__(self, lake: LakeConfig):
        from spark_jobs.io.s3 import lake_client

        self.lake, self.client, self.bucket = lake, lake_client(lake), lake.bucket

    _code = staticmethod(create_only.error_code)

    def create(self, key: str, text: str) -> str | None:
        return create_only.put_if_absent(self.client, self.lake, key, text.encode(), ContentType="application/json")

    def read(self, key: str) -> Stored | None:
        from botocore.exceptions import ClientError

        try:
            got = self.client.get_object(Bucket=self.bucket, Key=key)
        except ClientError as exc:
            if self._code(exc) in ("NoSuchKey", "404"):
                return None
            raise
        return Stored(got["Body"].read().decode("utf-8", "replace"), got["ETag"],
                      got["LastModified"].astimezone(dt.timezone.utc), _response_time(got))

    def replace(self, key: str, text: str, tag: str) -> str | None:
        from botocore.exceptions import ClientError

        try:
            return self.client.put_object(Bucket=self.bucket, Key=key, Body=text.encode(), IfMatch=tag,
                                          ContentType="application/json", **create_only.sse_kms(self.lake))["ETag"]
        except ClientError as exc:
            if self._code(exc) in (*create_only.PRECONDITION_CODES, "NoSuchKey", "404"):
                return None
            raise

    def delete(self, key: str, tag: str) -> bool:
        from botocore.exceptions import ClientError

        try:
            self.client.delete_object(Bucket=self.bucket, Key=key, IfMatch=tag)
        except ClientError as exc:
            if self._code(exc) in ("PreconditionFailed", "412", "NoSuchKey", "404"):
                return False
            raise
        return True

    def names(self, prefix: str) -> list[str]:
        found = []
        for page in self.client.get_paginator("list_objects_v2").paginate(Bucket=self.bucket, Prefix=prefix,
                                                                         Delimiter="/"):
            found += [o["Key"][len(prefix):] for o in page.get("Contents", [])]
        return sorted(found)


class _FolderStore:
    """Lease files in a folder lake. Create: a complete temporary file hard-linked to the name (``link``
    fails when the name exists, so it is create-only and never shows half a file). Replace and delete
    compare the current bytes under an exclusive ``flock`` of the folder's ``.leases.lock``."""

    def __init__(self, lake: LakeConfig):
        self.root = lake.folder

    @staticmethod
    def _tag(data: bytes) -> str:
        return hashlib.sha256(data).hexdigest()

    @contextlib.contextmanager
    def _locked(self, path) -> Iterator[None]:
        import fcntl

        path.parent.mkdir(parents=True, exist_ok=True)
        with open(path.parent / ".leases.lock", "a") as handle:
            fcntl.flock(handle, fcntl.LOCK_EX)
            try:
                yield
            finally:
                fcntl.flock(handle, fcntl.LOCK_UN)

    def create(self, key: str, text: str) -> str | None:
        return self._tag(text.encode()) if create_only.link_if_absent(self.root / key, text.encode()) else None

    def read(self, key: str) -> Stored | None:
        path = self.root / key
        try:
            data, modified = path.read_bytes(), path.stat().st_mtime
        except FileNotFoundError:
            return None
        return Stored(data.decode("utf-8", "replace"), self._tag(data),
                      dt.datetime.fromtimestamp(modified, dt.timezone.utc), dt.datetime.now(dt.timezone.utc))

    def replace(self, key: str, text: str, tag: str) -> str | None:
        path = self.root / key
        with self._locked(path):
            current = self.read(key)
            if current is None or current.tag != tag:
                return None
            os.replace(create_only.temporary_beside(path, text.encode()), path)
        return self._tag(text.encode())

    def delete(self, key: str, tag: str) -> bool:
        path = self.root / key
        with self._locked(path):
            current = self.read(key)
            if current is None or current.tag != tag:
                return False
            path.unlink()
        return True

    def names(self, prefix: str) -> list[str]:
        folder = self.root / prefix
        return sorted(p.name for p in folder.iterdir() if p.is_file()) if folder.is_dir() else []


def lease_store(lake: LakeConfig):
    """The lake's lease store: S3 for an object-store lake, the folder otherwise."""
    return _S3Store(lake) if lake.is_object_store else _FolderStore(lake)


# ---- who holds a lease, and is it alive ------------------------------------------------------------------
# Leases this process holds now (store keys): a lease of this process's pid that is not among them was left
# by an earlier run in the same process (a test session, a notebook) and no longer counts.
_HELD: set[str] = set()
# The same leases by (lake URI, store key), for ``fence``.
_FENCES: dict[tuple[str, str], "_Held"] = {}


def _read_first_line(path: str) -> str:
    try:
        with open(path, encoding="ascii", errors="replace") as handle:
            return handle.readline().strip()
    except OSError:
        return ""


def host_identity() -> dict[str, str]:
    """What makes a pid on this host mean one process: the host name, this boot (Linux's ``boot_id``) and the
    pid namespace (``/proc/self/ns/pid``). Containers with host networking share a host name but not pids;
    two boots reuse pids. "" where the system does not say (then no lease is judged by its pid)."""
    try:
        namespace = os.readlink("/proc/self/ns/pid")
    except OSError:
        namespace = ""
    return {"host": socket.gethostname(), "boot_id": _read_first_line("/proc/sys/kernel/random/boot_id"),
            "pid_namespace": namespace}


def _same_pid_space(lease: dict[str, Any]) -> bool:
    """The lease was written by a process whose pid this process can check: same host, boot and pid namespace."""
    mine = host_identity()
    return (lease.get("host") == mine["host"] and bool(mine["boot_id"]) and bool(mine["pid_namespace"])
            and lease.get("boot_id") == mine["boot_id"] and lease.get("pid_namespace") == mine["pid_namespace"])


def _process_started(pid: int) -> str:
    """The process's start time in clock ticks since boot (Linux ``/proc``), "" where unknown: with the pid it
    tells a live run from another process that got the same pid later."""
    try:
        stat = open(f"/proc/{pid}/stat", encoding="ascii", errors="replace").read()
    except OSError:
        return ""
    fields = stat.rsplit(")", 1)[-1].split()
    return fields[19] if len(fields) > 19 else ""


def _process_alive(pid: int, started: str) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        pass
    return not started or _process_started(pid) in ("", started)


def _parse_time(text: Any) -> dt.datetime | None:
    try:
        return dt.datetime.strptime(str(text), _TIME).replace(tzinfo=dt.timezone.utc)
    except ValueError:
        return None


def stale_reason(lease: dict[str, Any], modified: dt.datetime, key: str = "", now: dt.datetime | None = None) -> str | None:
    """Why a lease no longer counts (None: it is live). ``modified``: when it was last written, and ``now``: the
    time it was read, both by the store's clock (``Stored``; default: this machine's clock). Its pid decides only
    where a pid means the same process (``_same_pid_space``); elsewhere its heartbeats do."""
    now = now or dt.datetime.now(dt.timezone.utc)
    pid = lease.get("pid")
    if "heartbeat_seconds" in lease:  # ours: rewritten while its run lives
        if _same_pid_space(lease) and isinstance(pid, int):
            if pid == os.getpid() and key not in _HELD:
                return "this process left it behind"
            if not _process_alive(pid, str(lease.get("pid_started") or "")):
                return f"its process (pid {pid}) on this host is gone"
            return None
        silent = (now - modified).total_seconds()
        if silent >= LEASE_STALE_SECONDS:
            return f"no heartbeat for {int(silent // 60)} min"
        return None
    since = _parse_time(lease.get("since")) or modified
    if now - since > dt.timedelta(hours=LEASE_STALE_HOURS):
        return f"older than {LEASE_STALE_HOURS} h"
    return None


def _decode(stored: Stored) -> dict[str, Any]:
    try:
        lease = json.loads(stored.text)
    except ValueError:
        lease = None
    return lease if isinstance(lease, dict) else {"since": stored.modified.strftime(_TIME)}


def holder_text(lease: dict[str, Any]) -> str:
    """``run 2026…-1a2b3c4d (run-all, pid 4242 on host-a) since 2026-…Z``: who holds a lease, in a few words."""
    who = f"run {lease['run_id']}" if lease.get("run_id") else f"a {lease.get('layer') or 'pipeline'} run"
    how = ", ".join(x for x in (str(lease.get("command") or ""),
                                f"pid {lease.get('pid')} on {lease.get('host')}" if lease.get("pid") else "") if x)
    return f"{who}{f' ({how})' if how else ''} since {lease.get('since') or 'an unknown time'}"


def live_leases(spark: Any, lake: LakeConfig, dataset: str,
                now: dt.datetime | None = None) -> list[tuple[str, dict[str, Any]]]:
    """The live leases of runs on ``dataset`` (``stale_reason`` None): (uri, lease). ``spark`` is not used
    (kept for the callers' signature): the store needs none."""
    store, prefix, found = lease_store(lake), _runs_prefix(dataset), []
    for name in store.names(prefix):
        if not name.endswith(".lease") or name.startswith("."):
            continue
        stored = store.read(prefix + name)
        if stored is None:
            continue
        lease = _decode(stored)
        if stale_reason(lease, stored.modified, prefix + name, now or stored.now) is None:
            found.append((lake.path(prefix + name), lease))
    return found


def lock_holder(spark: Any, lake: LakeConfig, dataset: str) -> dict[str, Any] | None:
    """The erasure lock of the dataset as written (``request_id``, ``subjects_digest``, ``since``), or None."""
    stored = lease_store(lake).read(_lock_key(dataset))
    if stored is None:
        return None
    try:
        holder = json.loads(stored.text)
    except ValueError:
        return {"request_id": "unknown"}
    return holder if isinstance(holder, dict) else {"request_id": "unknown"}


def active_request(spark: Any, lake: LakeConfig, dataset: str) -> str | None:
    """The request id holding the dataset's erasure lock, or None."""
    holder = lock_holder(spark, lake, dataset)
    return None if holder is None else (holder.get("request_id") or "unknown")


# ---- taking, keeping and releasing leases ----------------------------------------------------------------
class LeaseLost(JobFailed):
    """A run no longer holds a lease it needs for a commit (taken over, or it cannot be renewed): it stops
    before the commit, in one line (exit 1)."""

    def __init__(self, message: str):
        super().__init__(message, 1)


@dataclasses.dataclass
class _Held:
    key: str
    tag: str
    store: Any = None
    text: Callable[[], str] | None = None
    label: str = ""
    lake: LakeConfig | None = None
    # Why the lease is no longer this run's (a heartbeat found it taken over); None while it is.
    lost: str | None = None
    lock: threading.Lock = dataclasses.field(default_factory=threading.Lock)

    def renew(self) -> str | None:
        """One conditional rewrite: the new tag, or None (another run holds it, or it is gone). Under the lock,
        so the heartbeat and a fence never race on the tag."""
        with self.lock:
            if self.lost:
                return None
            tag = self.store.replace(self.key, self.text(), self.tag)
            if tag:
                self.tag = tag
            else:
                self.lost = self.lost or "another run took it over"
            return tag


def _lease_text(run_id: str, layer: str, command: str, since: str) -> str:
    pid = os.getpid()
    return json.dumps({"run_id": run_id, "layer": layer, "command": command, **host_identity(),
                       "pid": pid, "pid_started": _process_started(pid), "since": since,
                       "heartbeat": dt.datetime.now(dt.timezone.utc).strftime(_TIME),
                       "heartbeat_seconds": LEASE_HEARTBEAT_SECONDS}, sort_keys=True)


def fence(lake: LakeConfig, dataset: str, layer: str, what: str) -> None:
    """Right before a commit of ``what``: renew the ``layer`` lease of ``dataset`` this process holds (a
    conditional write on its tag). ``LeaseLost`` in one line when another run took it over or the renewal
    fails; nothing when this process holds no such lease (a job called without ``run_layer``)."""
    held = _FENCES.get((lake.lake_uri, lease_key(dataset, layer)))
    if held is None:
        return
    try:
        tag = held.renew()
    except Exception as exc:  # noqa: BLE001 - cannot prove the lease is still ours: do not commit
        why = f"it could not be renewed: {(str(exc).splitlines() or [type(exc).__name__])[0][:200]}"
    else:
        if tag:
            return
        current = held.store.read(held.key)
        holder = holder_text(_decode(current)) if current is not None else "nobody (it was deleted)"
        why = f"{held.lost or 'another run took it over'}; it is now held by {holder}"
    raise LeaseLost(f"{held.label} {dataset}: this run no longer holds the {layer} lease of {dataset} ({why}); it "
                    f"stopped before committing {what}, which is as it was: run it again once the other run has "
                    f"ended ({lake.path(held.key)})")


def _take(store, lake: LakeConfig, dataset: str, layer: str, text: Callable[[], str], label: str,
          progress: Callable[[str], None]) -> _Held:
    """Create the lease of ``layer``, or take over a stale one; ``LeaseRefused`` naming a live holder."""
    key = lease_key(dataset, layer)
    for _ in range(3):  # a lease released or taken over meanwhile: look again
        tag = store.create(key, text())
        if tag is not None:
            return _Held(key, tag)
        stored = store.read(key)
        if stored is None:
            continue
        lease = _decode(stored)
        reason = stale_reason(lease, stored.modified, key, stored.now)
        if reason is None:
            raise LeaseRefused(
                f"{label} {dataset}: the {layer} layer of {dataset} is held by {holder_text(lease)}; nothing was "
                f"done: run it again when that run has ended (a killed run's lease is taken over "
                f"{LEASE_STALE_SECONDS // 60} min after its last heartbeat, at once on its own host; to take it "
                f"now, delete {lake.path(key)})")
        tag = store.replace(key, text(), stored.tag)
        if tag is not None:
            progress(f"[{label} {dataset}] took over the {layer} lease of {holder_text(lease)}: {reason}")
            return _Held(key, tag)
    raise LeaseRefused(f"{label} {dataset}: the {layer} lease ({lake.path(key)}) changed hands three times while "
                       "this run tried to take it; nothing was done: run it again")


def _stderr(line: str) -> None:
    print(line, file=sys.stderr, flush=True)


class _Heartbeat:
    """Rewrites the held leases every ``LEASE_HEARTBEAT_SECONDS`` (a conditional replace on each one's tag)."""

    def __init__(self, store, held: list[_Held], label: str):
        self.store, self.held, self.label = store, held, label
        self.stop = threading.Event()
        self.thread = threading.Thread(target=self._beat, name="tenantlake-lease-heartbeat", daemon=True)

    def __enter__(self) -> "_Heartbeat":
        self.thread.start()
        return self

    def __exit__(self, *exc: Any) -> None:
        self.stop.set()
        self.thread.join(timeout=30)

    def _beat(self) -> None:
        warned: set[str] = set()
        while not self.stop.wait(LEASE_HEARTBEAT_SECONDS):
            for lease in self.held:
                try:
                    tag = lease.renew()
                except Exception as exc:  # noqa: BLE001 - a missed heartbeat is retried at the next one
                    tag, problem = "", (str(exc).splitlines() or [type(exc).__name__])[0]
                else:
                    problem = "another run took it over (this run was silent too long)"
                    if not tag:
                        lease.lost = "another run took it over while this run was silent"
                if not tag and lease.key not in warned:
                    warned.add(lease.key)
                    _stderr(f"warning: {self.label}: could not renew the lease {lease.key} ({problem}); the run "
                            "stops before its next commit unless a renewal succeeds first")


@contextlib.contextmanager
def held_leases(lake: LakeConfig, claims: list[tuple[str, str]], *, label: str, command: str = "",
                kind: str | None = None, run_id: str | None = None, erasure_request: str | None = None,
                progress: Callable[[str], None] = _stderr) -> Iterator[str]:
    """Hold the leases of ``claims`` ((dataset, layer) pairs) while the block runs; yields the run id they
    name (``run_id``, else a new one). ``label`` starts every message (``run-all``, ``bronze``, ``maintain``),
    ``command`` says what holds them, ``kind`` is the lease's ``layer`` field (default: the layer it guards;
    ``maintain`` for maintenance). Raises ``LeaseRefused`` (nothing taken is kept) when a live run holds one
    of them, or when an erasure request other than ``erasure_request`` (the request that makes this run
    itself) holds one of the datasets. The leases are released however the block ends; when that fails, a
    warning says they go stale after ``LEASE_STALE_SECONDS``."""
    from spark_jobs.runs.manifest import new_run_id

    check_endpoint(lake)  # before any lookup: s3a and boto3 would retry a dead endpoint for minutes
    store, run_id = lease_store(lake), run_id or new_run_id()
    since = dt.datetime.now(dt.timezone.utc).strftime(_TIME)
    layers = {lease_key(dataset, layer): kind or layer for dataset, layer in claims}
    held: list[_Held] = []

    def text(key: str) -> str:
        return _lease_text(run_id, layers[key], command or label, since)

    try:
        for dataset, layer in claims:
            key = lease_key(dataset, layer)
            taken = _take(store, lake, dataset, layer, lambda key=key: text(key), label, progress)
            taken.store, taken.text, taken.label, taken.lake = store, (lambda key=key: text(key)), label, lake
            held.append(taken)
            _HELD.add(key)
            _FENCES[(lake.lake_uri, key)] = taken
        for dataset in dict.fromkeys(dataset for dataset, _ in claims):
            request = active_request(None, lake, dataset)
            if request is not None and request != erasure_request:
                raise LeaseRefused(
                    f"{label} {dataset}: erasure request {request} is in progress on this dataset "
                    f"({lock_uri(lake, dataset)}); runs start again when it completes (if it was killed, run its "
                    "erase command again to finish it)")
        with _Heartbeat(store, held, label):
            yield run_id
    finally:
        problems = []
        for lease in held:
            _HELD.discard(lease.key)
            _FENCES.pop((lake.lake_uri, lease.key), None)
            try:
                check_endpoint(lake)  # fast: after an outage, a delete would be retried for minutes
                with lease.lock:
                    deleted = store.delete(lease.key, lease.tag)
                if not deleted:
                    problems.append(f"{lease.key} was taken over by another run")
            except Exception as exc:  # noqa: BLE001 - never hide the run's own outcome; the lease goes stale
                problems.append(f"{lease.key}: {(str(exc).splitlines() or [type(exc).__name__])[0]}")
        if problems:
            progress(f"warning: {label}: could not remove the run's lease ({'; '.join(problems)}); a lease counts "
                     f"until {LEASE_STALE_SECONDS // 60} min after its last heartbeat")


@contextlib.contextmanager
def held_lease(spark: Any, lake: LakeConfig, dataset: str, layer: str,
               erasure_request: str | None = None, run_id: str | None = None) -> Iterator[str]:
    """The leases one run of ``layer`` (``maintain`` for table maintenance: silver's and gold's) on
    ``dataset`` takes, held while the block runs (``held_leases``); yields the run id. ``spark`` is not used."""
    layers = MAINTAIN_LAYERS if layer == "maintain" else (layer,)
    with held_leases(lake, [(dataset, name) for name in layers], label=layer, kind=layer, run_id=run_id,
                     erasure_request=erasure_request) as token:
        yield token


# ---- the erasure lock: create-only, kept alive by heartbeats while its request runs ----------------------------
def lock_key(dataset: str) -> str:
    """The erasure lock of a dataset, relative to the lake root."""
    return _lock_key(dataset)


def lock_text(request_id: str, digest: str, since: str) -> str:
    """What an erasure request writes in a lock: the request, a keyed digest of its subjects, since when, and
    the heartbeat fields of a lease, so that ``stale_reason`` tells a running request from a killed one."""
    pid = os.getpid()
    return json.dumps({"request_id": request_id, "subjects_digest": digest, "since": since,
                       **host_identity(), "pid": pid, "pid_started": _process_started(pid),
                       "heartbeat": dt.datetime.now(dt.timezone.utc).strftime(_TIME),
                       "heartbeat_seconds": LEASE_HEARTBEAT_SECONDS}, sort_keys=True)


def read_lock(lake: LakeConfig, dataset: str) -> tuple[dict[str, Any], Stored] | None:
    """The dataset's erasure lock as written and as stored (its tag, when it was written), or None."""
    stored = lease_store(lake).read(_lock_key(dataset))
    return None if stored is None else (_decode(stored), stored)


@dataclasses.dataclass
class HeldLock:
    """A lock this process wrote: its store key and the tag a conditional rewrite or delete must match."""

    key: str
    tag: str


def create_lock(lake: LakeConfig, dataset: str, text: str) -> HeldLock | None:
    """Write the dataset's lock create-only: the held lock, or None when one exists."""
    tag = lease_store(lake).create(_lock_key(dataset), text)
    return None if tag is None else HeldLock(_lock_key(dataset), tag)


def replace_lock(lake: LakeConfig, dataset: str, text: str, tag: str) -> HeldLock | None:
    """Rewrite the dataset's lock if it is still the one read with ``tag`` (a killed request's, resumed)."""
    new = lease_store(lake).replace(_lock_key(dataset), text, tag)
    return None if new is None else HeldLock(_lock_key(dataset), new)


def release_lock(lake: LakeConfig, held: HeldLock) -> bool:
    """Delete a lock this process holds (conditionally: never one another request took over)."""
    return lease_store(lake).delete(held.key, held.tag)


@contextlib.contextmanager
def lock_heartbeat(lake: LakeConfig, held: list[HeldLock], text: Callable[[], str]) -> Iterator[None]:
    """Rewrite the held locks every ``LEASE_HEARTBEAT_SECONDS`` while the block runs (their tags follow)."""
    store = lease_store(lake)
    beating = [_Held(lock.key, lock.tag, store=store, text=text, label="erase", lake=lake) for lock in held]
    try:
        with _Heartbeat(store, beating, "erase"):
            yield
    finally:
        for lock, beat in zip(held, beating):
            lock.tag = beat.tag
