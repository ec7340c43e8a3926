# The Lake Formation settings of the samples' account in eu-west-1 (acme and globex keep their lakes there).
# Lake Formation's settings are one per account and region, and out of the box they hand every new database and
# table to IAM_ALLOWED_PRINCIPALS, so Lake Formation's tags and grants would decide nothing. This unit, not a
# tenant, makes the identity applying it (and admin_principal_arns) the administrators and leaves the defaults of
# new databases and tables empty. The tenants of this account and region depend on it (dependency
# "lake_formation"), so it is applied before their Glue databases exist; the runner refuses a tenant's apply
# where the account still keeps IAM_ALLOWED_PRINCIPALS in its defaults.
#
# A unit, not a tenant: directories under tenants/ whose name starts with "_" hold no tenant. Its kind is its
# directory name's start, lake-formation (tenants/README.md, "Lake Formation settings"; the inputs and their rules:
# infra/platform_lake_formation.py).

include "root" {
  path = find_in_parent_folders("root.hcl")
}

# This unit's own module. A terraform block here replaces the one in root.hcl (Terragrunt's shallow include merge),
# so the synth hook is repeated.
terraform {
  source = get_env("TENANTLAKE_PLATFORM_LAKE_FORMATION_SOURCE", "${get_repo_root()}/infra/build//platform_lake_formation")

  before_hook "synth_if_stale" {
    commands    = ["init", "plan", "apply", "destroy"]
    execute     = ["${get_repo_root()}/.venv/bin/python", "-m", "infra.terragrunt", "synth-if-stale"]
    working_dir = get_repo_root()
  }
}

inputs = {
  region = "eu-west-1"
  # moto's fixed account, as in the tenants' files; for TENANTLAKE_ENV=aws the real one (the apply refuses
  # credentials of another account).
  account_id = "123456789012"
  # Lake Formation administrators besides the identity that applies this unit, which stays one: the tenants' applies
  # create LF-tags and grants, which only an administrator may (IAM role or user ARNs).
  admin_principal_arns = []
}
