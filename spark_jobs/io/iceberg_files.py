"""An Iceberg table's live data files, read from its metadata with plain Python (no Spark, no JVM).

For engines that read Parquet directly: DuckDB in the benchmarks and tests reads a table as the list
of files of its current snapshot, never as a ``**/*.parquet`` glob. A glob would also read files that
only older snapshots reference (an overwrite leaves them in place until ``maintain`` expires the
snapshot) and the orphans of a killed write. DuckDB's own iceberg extension is a run-time download,
which this project does not allow.

Works on a table folder of the Hadoop catalog's layout (``<table>/metadata/version-hint.text`` and
``v<N>.metadata.json``), local or downloaded from S3: paths in the metadata (``s3a://…``, ``file:…``)
are mapped onto the folder through the table's recorded ``location``. It reads the Avro manifest lists
and manifests with ``fastavro`` (a pinned dependency; the erasure's scan reads manifests with it too, on
EMR from the jobs' dependency archive). ``duckdb_source`` needs the ``duckdb`` package (benchmarks and
tests). Tables with delete files (merge-on-read) cannot be read as a file list; ``data_files`` refuses
them. The pipeline writes copy-on-write overwrites only, so its tables have none.
"""
from __future__ import annotations

import dataclasses
import gzip
import io
import json
from pathlib import Path
from typing import Any, BinaryIO, Iterator

import fastavro

AVRO_MAGIC = b"Obj\x01"
STATUS_DELETED = 2      # manifest entry status: 0 existing, 1 added, 2 deleted
CONTENT_DATA = 0        # manifest / data file content: 0 data, 1 position deletes, 2 equality deletes


class IcebergMetadataError(ValueError):
    """The folder is not an Iceberg table this reader understands; the message says why."""


# ---------------------------------------------------------------------------- Avro (fastavro)
def read_avro(data: bytes) -> list[dict[str, Any]]:
    """Every record of an Avro object container file."""
    return list(iter_avro(io.BytesIO(data))[1])


def iter_avro(stream: BinaryIO) -> tuple[dict[str, str], Iterator[Any]]:
    """(file metadata, iterator of records) of an Avro object container file read from ``stream``, one
    block in memory at a time (``fastavro``: codecs ``null``, ``deflate`` and the others it supports).
    Records come as Avro gives them: ``bytes``/``fixed`` as bytes, logical types as Python values."""
    if stream.read(4) != AVRO_MAGIC:
        raise IcebergMetadataError("not an Avro object container file")
    stream.seek(-4, io.SEEK_CUR)
    try:
        reader = fastavro.reader(stream)
    except Exception as exc:  # noqa: BLE001 - fastavro raises several kinds for a broken header
        raise IcebergMetadataError(f"unreadable Avro header ({type(exc).__name__})") from None
    return dict(reader.metadata), iter(reader)


# ---------------------------------------------------------------------------- Iceberg metadata
@dataclasses.dataclass(frozen=True)
class DataFile:
    path: Path          # the file in the local folder
    uri: str            # as the metadata records it
    record_count: int


def _version_file(folder: Path, version: int) -> Path | None:
    for name in (f"v{version}.metadata.json", f"v{version}.gz.metadata.json"):
        if (folder / name).is_file():
            return folder / name
    return None


def metadata_file(table_dir: Path) -> Path:
    """The current ``v<N>.metadata.json`` of a Hadoop-catalog table folder. As Iceberg's own reader
    does, ``version-hint.text`` is only where the search starts: a commit is complete once its
    ``v<N+1>.metadata.json`` exists, even if the process died before updating the hint."""
    folder = Path(table_dir) / "metadata"
    hint = folder / "version-hint.text"
    versions = sorted(int(p.name[1:].split(".")[0]) for p in folder.glob("v*.metadata.json")
                      if p.name[1:].split(".")[0].isdigit()) if folder.is_dir() else []
    if not versions:
        raise IcebergMetadataError(f"{table_dir} is not an Iceberg table (no metadata/v<N>.metadata.json)")
    version = int(hint.read_text().strip()) if hint.is_file() and hint.read_text().strip().isdigit() else versions[-1]
    while _version_file(folder, version + 1) is not None:
        version += 1
    found = _version_file(folder, version)
    if found is None:
        raise IcebergMetadataError(f"{folder}: version-hint says {version}, but v{version}.metadata.json is missing")
    return found


def table_metadata(table_dir: Path) -> dict[str, Any]:
    path = metadata_file(table_dir)
    raw = path.read_bytes()
    return json.loads(gzip.decompress(raw) if path.name.endswith(".gz.metadata.json") else raw)


def _local(uri: str, location: str, table_dir: Path) -> Path:
    if not uri.startswith(location.rstrip("/") + "/"):
        raise IcebergMetadataError(f"{uri} is outside the table location {location}")
    return Path(table_dir) / uri[len(location.rstrip("/")) + 1:]


def data_files(table_dir: Path, snapshot_id: int | None = None) -> list[DataFile]:
    """The live data files of the current snapshot (or ``snapshot_id``); [] for a table with no snapshot."""
    meta = table_metadata(table_dir)
    location = meta["location"]
    wanted = meta.get("current-snapshot-id") if snapshot_id is None else snapshot_id
    if wanted is None or wanted == -1:
        return []
    snapshot = next((s for s in meta.get("snapshots", []) if s["snapshot-id"] == wanted), None)
    if snapshot is None:
        raise IcebergMetadataError(f"{table_dir}: no snapshot {wanted}")
    files = []
    for manifest in read_avro(_local(snapshot["manifest-list"], location, table_dir).read_bytes()):
        if manifest.get("content", CONTENT_DATA) != CONTENT_DATA:
            raise IcebergMetadataError(f"{table_dir}: snapshot {wanted} has delete files; read it through Spark")
        for entry in read_avro(_local(manifest["manifest_path"], location, table_dir).read_bytes()):
            if entry["status"] == STATUS_DELETED:
                continue
            data_file = entry["data_file"]
            if data_file.get("content", CONTENT_DATA) != CONTENT_DATA:
                raise IcebergMetadataError(f"{table_dir}: snapshot {wanted} has delete files; read it through Spark")
            files.append(DataFile(path=_local(data_file["file_path"], location, table_dir),
                                  uri=data_file["file_path"], record_count=int(data_file["record_count"])))
    return sorted(files, key=lambda f: f.uri)


def duckdb_source(table_dir: Path, snapshot_id: int | None = None) -> str:
    """A DuckDB relation (SQL, in parentheses) over the live files of the current snapshot (or
    ``snapshot_id``). Iceberg stores Spark timestamps as ``timestamptz``; they are given back as naive
    UTC timestamps, as Spark's own Parquet (silver and gold before the tables) gave them. An empty
    snapshot yields an empty relation."""
    import duckdb

    files = data_files(table_dir, snapshot_id)
    if not files:
        return "(SELECT NULL AS _empty WHERE false)"
    source = "read_parquet([" + ", ".join("'" + str(f.path).replace("'", "''") + "'" for f in files) + "])"
    with duckdb.connect() as con:
        columns = con.execute(f"DESCRIBE SELECT * FROM {source}").fetchall()
    naive = [f"timezone('UTC', \"{name}\") AS \"{name}\"" for name, kind, *_ in columns
             if kind == "TIMESTAMP WITH TIME ZONE"]
    return f"(SELECT * REPLACE ({', '.join(naive)}) FROM {source})" if naive else f"(SELECT * FROM {source})"
