# initech: personal data under GDPR, in Frankfurt.
include "root" {
  path = find_in_parent_folders("root.hcl")
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
  # The only tenant in eu-central-1: its unit manages the account's Lake Formation settings there.
  lake_formation = { manage_settings = true }
  tags = {
    owner    = "initech-finance"
    workload = "datalake"
  }
}
