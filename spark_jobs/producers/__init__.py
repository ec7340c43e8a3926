"""Stream producers: the sample data of ``spark_jobs.datagen`` sent to a tenant's Kinesis streams, and the
local stand-in for Firehose's Kinesis source (the emulator does not deliver Kinesis -> Firehose)."""
