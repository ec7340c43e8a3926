"""Small-file I/O for reports in the lake: plain paths directly, ``s3a://``/``s3://`` through Hadoop's
FileSystem of the running Spark session (same credentials and SSE-KMS settings as the jobs' writes,
and EMRFS on EMR), so the quality package needs no SDK of its own.
"""
from __future__ import annotations

import os
import shutil
from pathlib import Path
from typing import Any


def is_remote(uri: str) -> bool:
    return "://" in uri and not uri.startswith("file://")


def _local(uri: str) -> Path:
    return Path(uri[len("file://"):] if uri.startswith("file://") else uri)


def join(base: str, *parts: str) -> str:
    return "/".join([base.rstrip("/"), *[p.strip("/") for p in parts if p]])


def _fs(spark: Any, uri: str):
    jvm = spark.sparkContext._jvm
    path = jvm.org.apache.hadoop.fs.Path(uri)
    return path.getFileSystem(spark.sparkContext._jsc.hadoopConfiguration()), path, jvm


def write_text(spark: Any, uri: str, text: str) -> None:
    if not is_remote(uri):
        target = _local(uri)
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(text, encoding="utf-8")
        return
    fs, path, _ = _fs(spark, uri)
    stream = fs.create(path, True)
    try:
        stream.write(bytearray(text.encode("utf-8")))
    finally:
        stream.close()


def read_text(spark: Any, uri: str) -> str | None:
    if not is_remote(uri):
        target = _local(uri)
        return target.read_text(encoding="utf-8") if target.is_file() else None
    fs, path, jvm = _fs(spark, uri)
    if not fs.exists(path):
        return None
    stream = fs.open(path)
    try:
        reader = jvm.java.io.BufferedReader(jvm.java.io.InputStreamReader(stream, "UTF-8"))
        lines = []
        line = reader.readLine()
        while line is not None:
            lines.append(line)
            line = reader.readLine()
        return "\n".join(lines)
    finally:
        stream.close()


def list_dirs(spark: Any, uri: str) -> list[str]:
    """Names of the sub-folders of ``uri`` (empty if it does not exist)."""
    if not is_remote(uri):
        target = _local(uri)
        return sorted(p.name for p in target.iterdir() if p.is_dir()) if target.is_dir() else []
    fs, path, _ = _fs(spark, uri)
    if not fs.exists(path):
        return []
    return sorted(status.getPath().getName() for status in fs.listStatus(path) if status.isDirectory())


# Report files written to an object store at once: each is a few requests that mostly wait (a listing
# probe, the PUT with SSE-KMS, the parent-marker cleanup), so a run's 6-10 files take about the time of two.
PARALLEL_WRITES = 8


def copy_tree(spark: Any, local_dir: str | Path, uri: str, suffixes: tuple[str, ...] = (".html", ".json")) -> int:
    """Copy the files under ``local_dir`` whose names end in ``suffixes`` to ``uri``; return how many.
    To an object store the files are written concurrently (``PARALLEL_WRITES``; Hadoop's FileSystem is
    thread-safe and PySpark gives each thread its own JVM connection); the first failure is raised."""
    local_dir = Path(local_dir)
    files = [file for file in sorted(local_dir.rglob("*")) if file.is_file() and file.name.endswith(suffixes)]
    if is_remote(uri):
        from concurrent.futures import ThreadPoolExecutor

        def upload(file: Path) -> None:
            write_text(spark, join(uri, file.relative_to(local_dir).as_posix()), file.read_text(encoding="utf-8"))

        with ThreadPoolExecutor(max_workers=PARALLEL_WRITES, thread_name_prefix="tenantlake-report") as pool:
            for written in [pool.submit(upload, file) for file in files]:
                written.result()
        return len(files)
    for file in files:
        target = _local(join(uri, file.relative_to(local_dir).as_posix()))
        target.parent.mkdir(parents=True, exist_ok=True)
        if os.path.abspath(file) != os.path.abspath(target):
            shutil.copyfile(file, target)
    return len(files)
