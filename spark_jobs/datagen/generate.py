"""The generator proper: plans landing files per dataset, injects bad and late records, keeps the truth."""
from __future__ import annotations

import dataclasses
import datetime as dt
import json
import math
import random
import re
from typing import Any

from spark_jobs.contract.model import load_contract
from spark_jobs.contract.parts import MALFORMED_RULE
from spark_jobs.datagen import datasets as ds

BAD_KINDS: tuple[str, ...] = ("malformed", "wrong_type", "missing_key", "duplicate", "out_of_range", "unknown_field")
DEFAULT_START = "2020-11-16T22:00:00Z"
SUPPORTED = ("iot", "clickstream", "inventory")


class DatagenError(ValueError):
    pass


MAX_USERS = 9999
NAME_PREFIX = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,63}")


@dataclasses.dataclass(frozen=True)
class DatagenConfig:
    """Generator options.

    Attributes:
        dataset: iot | clickstream | inventory.
        sources: sensors (iot), sites (clickstream) or organisations (inventory). @default - 5
        records: records in total, bad ones included. @default - 1000
        batch_size: records per landing file (BATCH_SIZE). @default - 10
        interval_seconds: event time between two files of the stream (the roll interval). @default - 15
        bad_rate: share of records replaced by a bad record (0..1). @default - 0.0
        late_rate: share of good records that arrive late (0..1). @default - 0.0
        seed: random seed; same seed and options give the same files. @default - 42
        start: event time of the first file, ``YYYY-MM-DDTHH:MM:SSZ``. @default - "2020-11-16T22:00:00Z"
        users: clickstream: distinct users, ``user-0001`` to ``user-<users>`` (the contract's ids have 4
            digits, so at most ``MAX_USERS``). @default - 59
        name_prefix: put in front of every file name. Landing writes are create-only (a name bronze has read
            is never read again), so data of another seed or other options needs names of its own. @default - ""
    """

    dataset: str
    sources: int = 5
    records: int = 1000
    batch_size: int = 10
    interval_seconds: float = 15.0
    bad_rate: float = 0.0
    late_rate: float = 0.0
    seed: int = 42
    start: str = DEFAULT_START
    users: int = 59
    name_prefix: str = ""

    def validate(self) -> None:
        if self.dataset not in SUPPORTED:
            raise DatagenError(f"datagen: --dataset '{self.dataset}' has no generator; one of {', '.join(SUPPORTED)}")
        for name in ("sources", "records", "batch_size"):
            if getattr(self, name) < 1:
                raise DatagenError(f"datagen: --{name.replace('_', '-')} must be at least 1")
        if not 1 <= self.users <= MAX_USERS:
            raise DatagenError(f"datagen: --users must be between 1 and {MAX_USERS} (user ids have 4 digits)")
        if self.interval_seconds <= 0:
            raise DatagenError("datagen: --interval must be positive (seconds)")
        for name in ("bad_rate", "late_rate"):
            if not 0.0 <= getattr(self, name) <= 1.0:
                raise DatagenError(f"datagen: --{name.replace('_', '-')} must be between 0 and 1")
        if self.name_prefix and not NAME_PREFIX.fullmatch(self.name_prefix):
            raise DatagenError("datagen: --name-prefix must start with a letter or digit and hold only letters, "
                               "digits, '.', '_' and '-' (bronze skips names that start with '.' or '_')")
        if self.bad_rate + self.late_rate > 1.0:
            raise DatagenError("datagen: --bad-rate + --late-rate must not exceed 1")
        try:
            start_time(self.start)
        except ValueError:
            raise DatagenError(f"datagen: --start '{self.start}' is not YYYY-MM-DDTHH:MM:SSZ") from None


def start_time(text: str) -> dt.datetime:
    return dt.datetime.strptime(text, ds.ISO_Z).replace(tzinfo=dt.timezone.utc)


@dataclasses.dataclass
class GeneratedData:
    """Files to land, and the truth about them.

    ``files``: (file name under ``landing/<dataset>/``, bytes). ``raw_records``: records as bronze will
    count them. ``valid``: the canonical rows silver must hold. ``bad``: one entry per bad record:
    ``{kind, reason, record}`` (``record`` = the JSON object sent) or, for malformed input,
    ``{kind, reason, raw}`` (the exact line) / ``{kind, reason, source_file}`` (a truncated file).
    """

    config: DatagenConfig
    files: list[tuple[str, bytes]]
    raw_records: int
    valid: list[dict[str, Any]]
    bad: list[dict[str, Any]]
    duplicates: int
    late: int

    def truth(self) -> dict[str, Any]:
        return {"config": dataclasses.asdict(self.config), "files": [name for name, _ in self.files],
                "raw_records": self.raw_records, "valid": self.valid, "bad": self.bad,
                "duplicates": self.duplicates, "late": self.late}


def _dumps(record: dict[str, Any]) -> str:
    return json.dumps(record, separators=(",", ":"))


def _plan(config: DatagenConfig) -> list[tuple[str, int, dt.datetime, list[tuple[dt.datetime, int]]]]:
    """(file name, source index, file time, [(event time, host number)] per record slot)."""
    start = start_time(config.start)
    files = []
    n_files = math.ceil(config.records / config.batch_size)
    for k in range(n_files):
        size = min(config.batch_size, config.records - k * config.batch_size)
        file_time = start + dt.timedelta(seconds=k * config.interval_seconds)
        if config.dataset == "iot":
            name, source = f"part-0-{k:06d}.json", -1
            slots = [(file_time + dt.timedelta(seconds=int(j * config.interval_seconds / config.batch_size)), j)
                     for j in range(size)]
        elif config.dataset == "clickstream":
            source = k % config.sources
            name = f"site-{source + 1:02d}-{k:06d}.jsonl"
            slots = [(file_time + dt.timedelta(seconds=int(j * config.interval_seconds / config.batch_size)), j)
                     for j in range(size)]
        else:  # inventory: one upload per org and round, every host of the org collected at once
            source, upload = k % config.sources, k // config.sources
            name = f"org-{source + 1:02d}-upload-{upload:05d}.json"
            file_time = start + dt.timedelta(seconds=upload * config.interval_seconds)
            slots = [(file_time, j) for j in range(size)]
        files.append((config.name_prefix + name, source, file_time, slots))
    return files


def _make_record(config: DatagenConfig, rng: random.Random, source: int, seq: int, ts: dt.datetime, host: int):
    if config.dataset == "iot":
        return ds._iot_record(rng, rng.randrange(config.sources) if source < 0 else source, seq, ts)
    if config.dataset == "clickstream":
        return ds._click_record(rng, source, seq, ts, config.users)
    return ds._inventory_record(rng, source, seq, ts, host)


def generate(config: DatagenConfig) -> GeneratedData:
    config.validate()
    contract = load_contract(config.dataset)
    rng = random.Random(config.seed)
    cosmetic = ds.COSMETIC[config.dataset]
    lateness = dt.timedelta(minutes=contract.lateness_minutes + 60)
    keys_seen: set[tuple] = set()
    files: list[tuple[str, bytes]] = []
    valid: list[dict[str, Any]] = []
    bad: list[dict[str, Any]] = []
    duplicates = late = raw_records = seq = bad_count = 0
    previous_file_sent: list[dict[str, Any]] = []  # raw records of the previous file that silver keeps

    for name, source, _file_time, slots in _plan(config):
        raw_texts: list[str] = []
        sent_valid: list[dict[str, Any]] = []
        kept_times: list[dt.datetime] = []
        for ts, host in slots:
            seq += 1
            roll = rng.random()
            is_bad, is_late = roll < config.bad_rate, config.bad_rate <= roll < config.bad_rate + config.late_rate
            kind = None
            if is_bad:  # round robin over the kinds: every kind appears once there are enough bad records
                kind = BAD_KINDS[bad_count % len(BAD_KINDS)]
                bad_count += 1
            if kind == "duplicate" and not previous_file_sent:
                kind = "wrong_type"
            if kind == "duplicate":
                raw = rng.choice(previous_file_sent)
                raw_texts.append(_dumps(raw))
                duplicates += 1
                raw_records += 1
                continue
            event_ts = ts - lateness if is_late else ts
            record = _make_record(config, rng, source, seq, event_ts, host)
            key = tuple(record[k] for k in contract.key)
            while key in keys_seen and config.dataset == "clickstream":
                record["url"] = f"https://{record['site_id']}.example.com/p/{rng.randrange(40, 100000)}"
                key = tuple(record[k] for k in contract.key)
            if key in keys_seen:
                raise DatagenError(f"datagen: key {key} generated twice; lower --records or raise --sources")
            raw = cosmetic(rng, record)
            raw_records += 1
            if kind == "malformed":
                text = _dumps(raw)
                truncated = text[: len(text) // 2]
                if contract.landing_format == "json_lines":
                    raw_texts.append(truncated)
                    bad.append({"kind": kind, "reason": MALFORMED_RULE, "raw": truncated})
                else:  # a producer died mid-upload: a truncated file of its own
                    corrupt_name = name.replace(".json", f"-retry-{seq:07d}.json")
                    files.append((corrupt_name, ("[" + truncated).encode()))
                    bad.append({"kind": kind, "reason": MALFORMED_RULE, "source_file": corrupt_name})
                continue
            if kind is not None:
                field, value, reason = ds.MUTATIONS[config.dataset][kind]
                if value is ds.DELETE:
                    raw.pop(field, None)
                else:
                    raw[field] = value
                raw_texts.append(_dumps(raw))
                bad.append({"kind": kind, "reason": reason, "record": raw})
                continue
            keys_seen.add(key)
            raw_texts.append(_dumps(raw))
            valid.append(record)
            kept_times.append(event_ts)
            if not is_late:
                sent_valid.append(raw)
        if raw_texts:
            if contract.landing_format == "json_lines":
                body = "\n".join(raw_texts) + "\n"
            else:
                body = "[" + ",".join(raw_texts) + "]"
            files.append((name, body.encode()))
        # Late, as silver defines it: older than the newest record of its file by more than the lateness.
        if kept_times:
            newest = max(kept_times)
            late += sum(1 for t in kept_times if t < newest - dt.timedelta(minutes=contract.lateness_minutes))
        # Duplicates re-send an on-time record of the previous file: it is on time in its new file
        # too, so the late count does not depend on which copy the dedupe keeps.
        previous_file_sent = sent_valid
    return GeneratedData(config=config, files=files, raw_records=raw_records, valid=valid, bad=bad,
                         duplicates=duplicates, late=late)


def summary(data: GeneratedData) -> str:
    kinds: dict[str, int] = {}
    for entry in data.bad:
        kinds[entry["kind"]] = kinds.get(entry["kind"], 0) + 1
    kinds_text = ", ".join(f"{k}={v}" for k, v in sorted(kinds.items())) or "none"
    return (f"{data.config.dataset}: {len(data.files)} files, {data.raw_records} records "
            f"({len(data.valid)} valid, {len(data.bad)} bad: {kinds_text}; {data.duplicates} duplicates; "
            f"{data.late} late)")
