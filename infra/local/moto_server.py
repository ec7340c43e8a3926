"""Entry point of the embedded emulator: moto's server, with one documented correction.

Moto 5.2.5 evaluates a bucket policy on every object request, but without any request context:
a statement's ``Condition`` (``aws:SecureTransport``, ``aws:SourceVpce``, ``aws:PrincipalArn``,
``s3:x-amz-server-side-encryption...``) can never match, and moto then treats the statement as a
match for every caller. Every conditional ``Deny`` in the tenant lake's policy therefore denied
*all* object reads and writes (403), which is neither AWS's behaviour nor moto's documented one.

The correction: bucket policies are stored and returned as usual (tests read them back and assert
every statement), but not evaluated on object requests, i.e. the emulator behaves as documented in
the README: "moto does not enforce bucket policies". Their effect is proven statically instead
(see tests/policies and the tenant-isolation analysis).

A second correction: moto 5.2.5 calls ``dispose()`` on every version when it deletes a key from a
bucket whose versioning is suspended, but its delete markers have no ``dispose`` method: the request
answered HTTP 500, and terraform's bucket destroy (which suspends versioning first) retried forever. Delete markers get a no-op
``dispose``. Nothing else in moto is changed.

Run as ``python -m infra.local.moto_server -H 127.0.0.1 -p PORT [-c CERT -k KEY]`` (same flags as
``python -m moto.server``); ``infra.local.emulator`` does this.
"""
from __future__ import annotations

import sys


def _disable_context_free_bucket_policy_evaluation() -> None:
    from moto.iam.access_control import PermissionResult
    from moto.s3.models import FakeBucket

    def get_permission(self, action: str, resource: str):  # noqa: ARG001 - moto's signature
        return PermissionResult.NEUTRAL

    FakeBucket.get_permission = get_permission


def _give_delete_markers_a_dispose() -> None:
    from moto.s3.models import FakeDeleteMarker

    if not hasattr(FakeDeleteMarker, "dispose"):
        FakeDeleteMarker.dispose = lambda self, garbage=False: None  # holds no buffer to release


def main(argv: list[str] | None = None) -> None:
    _disable_context_free_bucket_policy_evaluation()
    _give_delete_markers_a_dispose()
    from moto.server import main as moto_main

    moto_main(argv if argv is not None else sys.argv[1:])


if __name__ == "__main__":
    main()
