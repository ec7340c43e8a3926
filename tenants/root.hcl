# Terragrunt root configuration, shared by every tenant (Gruntwork live-repo style): each
# tenants/<tenant>/terragrunt.hcl includes this file and adds only its own `inputs`.
#
# Run it through `make plan|apply|destroy TENANT=<tenant>` (or `python -m infra.terragrunt`): that
# validates the tenant first, prepares the environment below, and runs real `terragrunt` when it is on
# PATH, else the documented fallback in infra/terragrunt/, which understands exactly the constructs
# used here (README "Terragrunt and tenants") and refuses any other.
#
# Environment switch: TENANTLAKE_ENV = local (default: the embedded moto server) | aws (real AWS).
# The module is the same in both; only the generated provider block and the backend settings differ.
# Variables the runner exports (`python -m infra.terragrunt env` prints them for a bare terragrunt run):
#   TENANTLAKE_STATE_ACCOUNT_ID / TENANTLAKE_STATE_REGION: where the state bucket lives;
#   TENANTLAKE_AWS_ENDPOINT and AWS_CA_BUNDLE: the emulator (local only).

locals {
  env      = get_env("TENANTLAKE_ENV", "local")
  is_local = local.env == "local"

  # One state bucket per account and region; every tenant has its own key in it.
  state_account_id = get_env("TENANTLAKE_STATE_ACCOUNT_ID")
  state_region     = get_env("TENANTLAKE_STATE_REGION", "eu-west-1")
  endpoint         = get_env("TENANTLAKE_AWS_ENDPOINT", "")
  ca_bundle        = get_env("AWS_CA_BUNDLE", "")

  provider_aws = <<-EOT
    provider "aws" {
      region = var.region
    }
  EOT

  # The emulator: dummy keys, path-style S3, no region/metadata probing (the account id is asked of the
  # emulator's STS), every service the module uses pointed at moto, and its private CA trusted.
  provider_local = <<-EOT
    provider "aws" {
      region                      = var.region
      access_key                  = "testing"
      secret_key                  = "testing"  # pragma: allowlist secret - dummy or public value
      s3_use_path_style           = true
      skip_credentials_validation = true
      # The account id comes from the emulator's STS: the provider builds the ARNs of Glue databases and
      # Athena workgroups from it (without it, arn:aws:athena:<region>::workgroup/... names nothing).
      skip_requesting_account_id  = false
      skip_region_validation      = true
      skip_metadata_api_check     = "true"
      custom_ca_bundle            = "${local.ca_bundle}"
      endpoints {
        s3            = "${local.endpoint}"
        s3control     = "${local.endpoint}"
        iam           = "${local.endpoint}"
        sts           = "${local.endpoint}"
        kms           = "${local.endpoint}"
        ec2           = "${local.endpoint}"
        eks           = "${local.endpoint}"
        emrcontainers = "${local.endpoint}"
        logs          = "${local.endpoint}"
        cloudwatch    = "${local.endpoint}"
        sns           = "${local.endpoint}"
        sqs           = "${local.endpoint}"
        events        = "${local.endpoint}"
        firehose      = "${local.endpoint}"
        kinesis       = "${local.endpoint}"
        glue          = "${local.endpoint}"
        athena        = "${local.endpoint}"
        scheduler     = "${local.endpoint}"
        sfn           = "${local.endpoint}"
        lakeformation = "${local.endpoint}"
        ssm           = "${local.endpoint}"
        secretsmanager = "${local.endpoint}"
      }
    }
  EOT
}

# The synthesized module (issue 3). TENANTLAKE_MODULE_SOURCE points at another build of it.
terraform {
  source = get_env("TENANTLAKE_MODULE_SOURCE", "${get_repo_root()}/infra/build//tenant_lake")

  # Re-synthesize the module when a construct or the app changed after the last synth.
  before_hook "synth_if_stale" {
    commands    = ["init", "plan", "apply", "destroy"]
    execute     = ["${get_repo_root()}/.venv/bin/python", "-m", "infra.terragrunt", "synth-if-stale"]
    working_dir = get_repo_root()
  }
}

remote_state {
  backend = "s3"
  generate = {
    path      = "backend.tf"
    if_exists = "overwrite_terragrunt"
  }
  config = {
    bucket       = "tenantlake-tfstate-${local.state_account_id}-${local.state_region}"
    key          = "tenants/${path_relative_to_include()}/terraform.tfstate"
    region       = local.state_region
    encrypt      = true
    use_lockfile = true

    # Emulator only; all false / empty for TENANTLAKE_ENV=aws. The CA comes from AWS_CA_BUNDLE.
    use_path_style              = local.is_local
    skip_credentials_validation = local.is_local
    skip_requesting_account_id  = local.is_local
    skip_region_validation      = local.is_local
    skip_metadata_api_check     = local.is_local
    endpoints = {
      s3 = local.endpoint
    }
  }
}

generate "provider" {
  path      = "provider.tf"
  if_exists = "overwrite_terragrunt"
  contents  = local.is_local ? local.provider_local : local.provider_aws
}

# Inputs every tenant shares; a tenant's own inputs win (Terragrunt's shallow include merge).
inputs = {
  environment = local.is_local ? "local" : get_env("TENANTLAKE_STAGE", "dev")
}
