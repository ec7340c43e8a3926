"""An Iceberg table's live data files, read from its metadata with plain Python (no Spark, no JVM).

For engines that read Parquet directly: DuckDB in the benchmarks and tests reads a table as the list
of files of its current snapshot, never as a ``**/*.parquet`` glob. A glob would also read files that
only older snapshots reference (an overwrite leaves them in place until ``maintain`` expires the
snapshot) and the orphans of a killed write. DuckDB's own iceberg extension is a run-time download,
which this project does not allow.

Works on a table folder of the Hadoop catalog's layout (``<table>/metadata/version-hint.text`` and
``v<N>.metadata.json``), local or downloaded from S3: paths in the metadata (``s3a://…``, ``file:…``)
are mapped onto the folder through the table's recorded ``location``. It reads Avro manifests with
the small decoder below (Iceberg writes them uncompressed or deflate-compressed). ``duckdb_source``
needs the ``duckdb`` package (benchmarks and tests); the rest needs only the standard library. Tables with delete
files (merge-on-read) cannot be read as a file list; ``data_files`` refuses them. The pipeline writes
copy-on-write overwrites only, so its tables have none.
"""
from __future__ import annotations

import dataclasses
import gzip
import io
import json
import struct
import zlib
from pathlib import Path
from typing import Any, BinaryIO

AVRO_MAGIC = b"Obj\x01"
STATUS_DELETED = 2      # manifest entry status: 0 existing, 1 added, 2 deleted
CONTENT_DATA = 0        # manifest / data file content: 0 data, 1 position deletes, 2 equality deletes


class IcebergMetadataError(ValueError):
    """The folder is not an Iceberg table this reader understands; the message says why."""


# ---------------------------------------------------------------------------- a minimal Avro reader
def _long(stream: BinaryIO, end_ok: bool = False) -> int | None:
    """A zig-zag varint; with ``end_ok``, None at the end of the stream (before its first byte)."""
    shift, value = 0, 0
    while True:
        byte = stream.read(1)
        if not byte:
            if end_ok and shift == 0:
                return None
            raise IcebergMetadataError("truncated Avro data")
        value |= (byte[0] & 0x7F) << shift
        if not byte[0] & 0x80:
            return (value >> 1) ^ -(value & 1)
        shift += 7


def _bytes(stream: BinaryIO) -> bytes:
    return stream.read(_long(stream))


def _blocks(stream: BinaryIO):
    """Item counts of an Avro array/map, block by block (a negative count is followed by a byte size)."""
    while True:
        count = _long(stream)
        if count == 0:
            return
        if count < 0:
            _long(stream)
            count = -count
        yield count


def _named_types(schema: Any, names: dict[str, Any]) -> dict[str, Any]:
    """Every named type (record, fixed, enum) of a schema by name and full name: a later field may
    refer to one by name only."""
    if isinstance(schema, list):
        for branch in schema:
            _named_types(branch, names)
    elif isinstance(schema, dict):
        if schema["type"] in ("record", "fixed", "enum"):
            names[schema["name"]] = schema
            if schema.get("namespace"):
                names[f"{schema['namespace']}.{schema['name']}"] = schema
        for field in schema.get("fields", []):
            _named_types(field["type"], names)
        for key in ("items", "values"):
            if key in schema:
                _named_types(schema[key], names)
    return names


def _read(schema: Any, stream: BinaryIO, names: dict[str, Any]) -> Any:
    if isinstance(schema, list):  # union
        return _read(schema[_long(stream)], stream, names)
    if isinstance(schema, dict):
        kind = schema["type"]
        if kind == "record":
            return {field["name"]: _read(field["type"], stream, names) for field in schema["fields"]}
        if kind == "array":
            return [_read(schema["items"], stream, names) for count in _blocks(stream) for _ in range(count)]
        if kind == "map":
            return {_bytes(stream).decode(): _read(schema["values"], stream, names)
                    for count in _blocks(stream) for _ in range(count)}
        if kind == "fixed":
            return stream.read(schema["size"])
        if kind == "enum":
            return schema["symbols"][_long(stream)]
        return _read(kind, stream, names)  # a primitive with a logicalType
    if schema in ("int", "long"):
        return _long(stream)
    if schema == "string":
        return _bytes(stream).decode()
    if schema == "bytes":
        return _bytes(stream)
    if schema == "null":
        return None
    if schema == "boolean":
        return stream.read(1) == b"\x01"
    if schema == "float":
        return struct.unpack("<f", stream.read(4))[0]
    if schema == "double":
        return struct.unpack("<d", stream.read(8))[0]
    if schema in names:
        return _read(names[schema], stream, names)
    raise IcebergMetadataError(f"unsupported Avro type {schema!r}")


def read_avro(data: bytes) -> list[dict[str, Any]]:
    """Every record of an Avro object container file (codec ``null`` or ``deflate``)."""
    return list(iter_avro(io.BytesIO(data))[1])


def iter_avro(stream: BinaryIO) -> tuple[dict[str, bytes], Any]:
    """(file metadata, iterator of records) of an Avro object container file read from ``stream``, one
    block in memory at a time (codec ``null`` or ``deflate``)."""
    if stream.read(4) != AVRO_MAGIC:
        raise IcebergMetadataError("not an Avro object container file")
    meta = {_bytes(stream).decode(): _bytes(stream) for count in _blocks(stream) for _ in range(count)}
    sync = stream.read(16)
    schema = json.loads(meta["avro.schema"])
    names = _named_types(schema, {})
    codec = meta.get("avro.codec", b"null").decode()
    if codec not in ("null", "deflate"):
        raise IcebergMetadataError(f"Avro codec {codec} is not supported (null, deflate)")

    def records():
        while (count := _long(stream, end_ok=True)) is not None:
            block = _bytes(stream)
            if codec == "deflate":
                block = zlib.decompress(block, -15)
            block_stream = io.BytesIO(block)
            for _ in range(count):
                yield _read(schema, block_stream, names)
            if stream.read(16) != sync:
                raise IcebergMetadataError("Avro sync marker mismatch (corrupt file)")

    return meta, records()


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
