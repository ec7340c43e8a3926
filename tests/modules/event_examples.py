"""Example events in the shapes AWS documents, for testing the module's event patterns (EventBridge's matching as
moto implements it: ``matches``).

- S3 ``Object Created`` (EventBridge notifications): the example of the S3 user guide's "EventBridge event
  message structure";
- Step Functions ``Step Functions Execution Status Change``: the example of the Step Functions developer guide's
  "Automating Step Functions event delivery with EventBridge" (its detail lists ``executionArn``, ``stateMachineArn``,
  ``name``, ``status``, ``startDate``, ``stopDate``, ``input``, ``output``);
- EMR on EKS: the EventBridge events reference lists ``EMR Job Run State Change`` and
  ``EmrContainers Job Run State Change`` for ``aws.emr-containers`` but shows no example of either. The detail's
  ``virtualClusterId``, ``id``, ``name`` and ``state`` are what the job run's API shape (``DescribeJobRun``) names
  them; whether both detail-types carry those names is not confirmed by an AWS sample, so the tenant's rule matches
  both detail-types on these two fields, and tests try both.
"""
from __future__ import annotations

import copy
import json
from typing import Any


def matches(pattern: dict[str, Any], event: dict[str, Any]) -> bool:
    from moto.events.models import EventPattern

    return EventPattern.load(json.dumps(pattern)).matches_event(event)


S3_OBJECT_CREATED = {
    "version": "0", "id": "17793124-05d4-b198-2fde-7ededc63b103", "detail-type": "Object Created",
    "source": "aws.s3", "account": "123456789012", "time": "2024-05-01T10:03:27Z", "region": "eu-west-1",
    "resources": ["arn:aws:s3:::acme-eu-west-1-lake"],
    "detail": {"version": "0", "bucket": {"name": "acme-eu-west-1-lake"},
               "object": {"key": "landing/iot/2024/05/01/10/batch-0001.json", "size": 5,
                          "etag": "b1946ac92492d2347c6235b4d2611184",  # pragma: allowlist secret - AWS's example
                          "version-id": "IYV3p45BT0ac8hjHg1houSdS1a.Mro8e",
                          "sequencer": "617f08299329d189"},  # pragma: allowlist secret - AWS's example
               "request-id": "N4N7GDK58NMKJ12R", "requester": "123456789012", "source-ip-address": "1.2.3.4",
               "reason": "PutObject"},
}

EXECUTION_STATUS_CHANGE = {
    "version": "0", "id": "315c1398-40ff-a850-213b-158f73e60175", "detail-type": "Step Functions Execution Status Change",
    "source": "aws.states", "account": "123456789012", "time": "2024-05-01T10:42:21Z", "region": "eu-west-1",
    "resources": ["arn:aws:states:eu-west-1:123456789012:execution:acme-lake-pipeline:iot-arrival-2024-05-01T10-00"],
    "detail": {"executionArn": "arn:aws:states:eu-west-1:123456789012:execution:acme-lake-pipeline:"
                               "iot-arrival-2024-05-01T10-00",
               "stateMachineArn": "arn:aws:states:eu-west-1:123456789012:stateMachine:acme-lake-pipeline",
               "name": "iot-arrival-2024-05-01T10-00", "status": "FAILED", "startDate": 1714557746847,
               "stopDate": 1714558941881, "input": "{\"dataset\": \"iot\"}", "output": None},
}

EMR_JOB_RUN_STATE_CHANGE = {
    "version": "0", "id": "9e4a3c1a-2b4f-4c8e-a1f2-3d5e6f7a8b9c", "detail-type": "EMR Job Run State Change",
    "source": "aws.emr-containers", "account": "123456789012", "time": "2024-05-01T10:30:00Z", "region": "eu-west-1",
    "resources": [],
    "detail": {"severity": "ERROR", "virtualClusterId": "vc123", "id": "000000036k9ea4ak7ga",
               "name": "acme-iot-silver-auto", "state": "FAILED", "releaseLabel": "emr-7.5.0-latest",
               "executionRoleArn": "arn:aws:iam::123456789012:role/acme-emr-job-execution",
               "failureReason": "USER_ERROR", "stateDetails": "Job run failed"},
}


def variant(event: dict[str, Any], **changes: Any) -> dict[str, Any]:
    """A copy of ``event`` with top-level fields (``detail_type`` for ``detail-type``) or ``detail`` fields changed."""
    copied = copy.deepcopy(event)
    for key, value in changes.items():
        if key in ("detail_type", "source", "account", "time"):
            copied[key.replace("_", "-")] = value
        else:
            copied["detail"][key] = value
    return copied
