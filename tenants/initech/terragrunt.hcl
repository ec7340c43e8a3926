# initech: personal data under GDPR, in Frankfurt.
include "root" {
  path = find_in_parent_folders("root.hcl")
}

# The account's Lake Formation settings in this region (tenants/_platform/lake-formation-eu-central-1): applied before
# this tenant, so its Glue databases and tables get no IAM_ALLOWED_PRINCIPALS default. No output is read; the block
# orders the units (the runner refuses the tenant's apply while the account keeps that default).
dependency "lake_formation" {
  config_path                             = "../_platform/lake-formation-eu-central-1"
  mock_outputs                            = { region = "eu-central-1" }
  mock_outputs_allowed_terraform_commands = ["validate", "plan", "destroy"]
}

inputs = {
  tenant_id           = "initech"
  region              = "eu-central-1"
  data_classification = ["pii", "gdpr"]
  # moto's fixed account (see tenants/acme/terragrunt.hcl). initech brings its own VPC (in Frankfurt, away
  # from the shared cluster): the module creates its endpoints there. Locally the runner creates a fixture
  # VPC with this id (infra/local/network); for TENANTLAKE_ENV=aws, put the real VPC id here.
  account_id = "123456789012"
  vpc_ids    = ["vpc-036dbf1779fd5c315"]
  # Kinesis -> Firehose -> landing/<dataset>/ for these datasets (README "Streaming ingestion").
  streams = ["iot", "clickstream"]
  tags = {
    owner    = "initech-finance"
    workload = "datalake"
  }
}
