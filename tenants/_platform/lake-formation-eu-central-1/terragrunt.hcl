# The Lake Formation settings of the samples' account in eu-central-1 (initech keeps its lake there): the same as
# ../lake-formation-eu-west-1 (its comments say why a platform unit holds them), for another region. Lake
# Formation's settings are one per account and region.

include "root" {
  path = find_in_parent_folders("root.hcl")
}

terraform {
  source = get_env("TENANTLAKE_PLATFORM_LAKE_FORMATION_SOURCE", "${get_repo_root()}/infra/build//platform_lake_formation")

  before_hook "synth_if_stale" {
    commands    = ["init", "plan", "apply", "destroy"]
    execute     = ["${get_repo_root()}/.venv/bin/python", "-m", "infra.terragrunt", "synth-if-stale"]
    working_dir = get_repo_root()
  }
}

inputs = {
  region               = "eu-central-1"
  account_id           = "123456789012" # moto's fixed account; for TENANTLAKE_ENV=aws the real one
  admin_principal_arns = []
}
