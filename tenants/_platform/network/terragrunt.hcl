# The platform network of the shared EKS cluster (one cluster, one region): it owns the cluster VPC's
# S3 gateway endpoint and its STS, KMS and CloudWatch Logs interface endpoints. AWS allows one S3
# gateway-endpoint route per route table, so the tenants whose jobs run on the cluster share these
# endpoints instead of creating their own: each of them reads the ids through a `dependency` block on
# this unit (tenants/acme/terragrunt.hcl). The endpoint policies allow exactly the tenants listed in
# `tenants` below (their lake buckets, and the KMS keys behind their aliases), plus what the cluster
# itself reads (the ECR image-layer bucket and the AL2023 package repository of the region).
#
# A unit, not a tenant: directories under tenants/ whose name starts with "_" hold no tenant.
# tenants/README.md describes the layout; infra/platform.py the inputs and their rules.

include "root" {
  path = find_in_parent_folders("root.hcl")
}

# This unit's own module. A terraform block here replaces the one in root.hcl (Terragrunt's shallow
# include merge), so the synth hook is repeated.
terraform {
  source = get_env("TENANTLAKE_PLATFORM_NETWORK_SOURCE", "${get_repo_root()}/infra/build//platform_network")

  before_hook "synth_if_stale" {
    commands    = ["init", "plan", "apply", "destroy"]
    execute     = ["${get_repo_root()}/.venv/bin/python", "-m", "infra.terragrunt", "synth-if-stale"]
    working_dir = get_repo_root()
  }
}

locals {
  is_local = get_env("TENANTLAKE_ENV", "local") == "local"
}

inputs = {
  region = "eu-west-1"

  # Tenant id = account id of every tenant whose jobs run on the cluster. Each of them must have a
  # dependency block on this unit, keep its lake in this region, and use this account (the runner
  # checks all three before anything runs).
  tenants = {
    acme   = "123456789012"
    globex = "123456789012"
  }

  # The cluster's VPCs. Locally a fixture VPC stands in for the cluster's (create_fixture_vpc); for
  # TENANTLAKE_ENV=aws, list the real VPC ids in vpc_ids (the module refuses both or neither).
  create_fixture_vpc = local.is_local
  vpc_ids            = []

  tags = {
    owner = "platform-team"
  }
}
