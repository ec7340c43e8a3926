"""The runner's errors: each one's ``str()`` is one line a user can act on."""
from __future__ import annotations

from typing import Mapping


class TerragruntError(RuntimeError):
    """A problem a user can act on; ``str(err)`` is one line."""


class UnsupportedConstruct(TerragruntError):
    """The fallback met a Terragrunt construct it does not implement (install terragrunt or simplify)."""


class TenantNotAppliedError(TerragruntError):
    """The tenant has no Terraform state yet (``make apply TENANT=<t>`` first)."""


class TerraformFailed(TerragruntError):
    """A terraform command exited non-zero; ``output`` holds what it printed."""

    def __init__(self, message: str, output: list[str]):
        super().__init__(message)
        self.output = output


class StateLockedError(TerragruntError):
    """Terraform could not take the state lock: another run holds it, or a killed run left it behind."""

    def __init__(self, message: str, lock: Mapping[str, str]):
        super().__init__(message)
        self.lock = dict(lock)
