# initech: personal data under GDPR, in Frankfurt.
include "root" {
  path = find_in_parent_folders("root.hcl")
}

inputs = {
  tenant_id           = "initech"
  region              = "eu-central-1"
  data_classification = ["pii", "gdpr"]
  # moto's fixed account and the local fixture VPC (see tenants/acme/terragrunt.hcl).
  account_id = "123456789012"
  vpc_ids    = ["vpc-036dbf1779fd5c315"]
  # Kinesis -> Firehose -> landing/<dataset>/ for these datasets (README "Streaming ingestion").
  streams = ["iot", "clickstream"]
  tags = {
    owner    = "initech-finance"
    workload = "datalake"
  }
}
