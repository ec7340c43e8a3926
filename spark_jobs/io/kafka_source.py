"""Spark's Kafka source, configured for EMR (and MSK with IAM auth). NOT exercised by any test run here.

There is no Kafka broker on the development machine and no ``spark-sql-kafka-0-10`` jar (Maven Central
is unreachable), so only the option building below is unit-tested. On EMR the connector and
``kafka-clients`` ship with the Spark release; pass their paths (from the image) in ``spark.jars``.

``kafka_landing_stream`` yields the same ``(value, _source_file)`` shape as the landing file source,
one row per Kafka record, with ``_source_file = kafka://<topic>/<partition>/<offset>`` so bronze
lineage stays unique; a job would treat each value as one JSON-lines record.
"""
from __future__ import annotations

import dataclasses

MSK_IAM_JAAS = "software.amazon.msk.auth.iam.IAMLoginModule required;"
MSK_IAM_CALLBACK = "software.amazon.msk.auth.iam.IAMClientCallbackHandler"


@dataclasses.dataclass(frozen=True)
class KafkaSourceConfig:
    """Options of the Kafka source.

    Attributes:
        bootstrap_servers: ``host:port,...`` of the brokers (MSK: the IAM bootstrap brokers, port 9098).
        topic: the topic of one dataset.
        starting_offsets: where a new checkpoint starts. @default - "earliest"
        max_offsets_per_trigger: records per micro-batch at most. @default - 100000
        msk_iam: authenticate with IAM (SASL_SSL + AWS_MSK_IAM; needs aws-msk-iam-auth on the class path).
            @default - True
        fail_on_data_loss: stop when offsets expired before they were read. @default - True
    """

    bootstrap_servers: str
    topic: str
    starting_offsets: str = "earliest"
    max_offsets_per_trigger: int = 100_000
    msk_iam: bool = True
    fail_on_data_loss: bool = True


def kafka_options(cfg: KafkaSourceConfig) -> dict[str, str]:
    """The ``spark.readStream.format("kafka")`` options for ``cfg``."""
    if not cfg.bootstrap_servers or not cfg.topic:
        raise ValueError("kafka source: bootstrap_servers and topic are required")
    options = {
        "kafka.bootstrap.servers": cfg.bootstrap_servers,
        "subscribe": cfg.topic,
        "startingOffsets": cfg.starting_offsets,
        "maxOffsetsPerTrigger": str(cfg.max_offsets_per_trigger),
        "failOnDataLoss": str(cfg.fail_on_data_loss).lower(),
    }
    if cfg.msk_iam:
        options.update({
            "kafka.security.protocol": "SASL_SSL",
            "kafka.sasl.mechanism": "AWS_MSK_IAM",
            "kafka.sasl.jaas.config": MSK_IAM_JAAS,
            "kafka.sasl.client.callback.handler.class": MSK_IAM_CALLBACK,
        })
    return options


def kafka_landing_stream(spark, cfg: KafkaSourceConfig):
    """A streaming DataFrame ``(value, _source_file)`` from Kafka (untested here: see the module doc)."""
    from pyspark.sql import functions as F

    reader = spark.readStream.format("kafka")
    for key, value in kafka_options(cfg).items():
        reader = reader.option(key, value)
    source = F.concat_ws("/", F.lit("kafka:/"), F.col("topic"), F.col("partition").cast("string"),
                         F.col("offset").cast("string"))
    return reader.load().select(F.col("value").cast("string").alias("value"), source.alias("_source_file"))
