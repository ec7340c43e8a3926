"""spark_jobs/io/kafka_source.py: only the options can be checked here (no broker, no connector jar)."""
from __future__ import annotations

import pytest

from spark_jobs.io.kafka_source import KafkaSourceConfig, kafka_options


def test_msk_iam_options():
    options = kafka_options(KafkaSourceConfig("b-1.msk.example:9098", "acme.iot"))
    assert options == {
        "kafka.bootstrap.servers": "b-1.msk.example:9098", "subscribe": "acme.iot", "startingOffsets": "earliest",
        "maxOffsetsPerTrigger": "100000", "failOnDataLoss": "true",
        "kafka.security.protocol": "SASL_SSL", "kafka.sasl.mechanism": "AWS_MSK_IAM",
        "kafka.sasl.jaas.config": "software.amazon.msk.auth.iam.IAMLoginModule required;",
        "kafka.sasl.client.callback.handler.class": "software.amazon.msk.auth.iam.IAMClientCallbackHandler",
    }


def test_plain_options_and_required_fields():
    options = kafka_options(KafkaSourceConfig("k:9092", "t", msk_iam=False, starting_offsets="latest"))
    assert "kafka.security.protocol" not in options and options["startingOffsets"] == "latest"
    with pytest.raises(ValueError, match="bootstrap_servers and topic are required"):
        kafka_options(KafkaSourceConfig("", "t"))
