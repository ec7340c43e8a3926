# globex: internal data only, in us-east-1.
include "root" {
  path = find_in_parent_folders("root.hcl")
}

inputs = {
  tenant_id           = "globex"
  region              = "us-east-1"
  data_classification = ["internal"]
  # moto's fixed account and the local fixture VPC (see tenants/acme/terragrunt.hcl).
  account_id = "123456789012"
  vpc_ids    = ["vpc-38ebbeba02576b4f2"]
  tags = {
    owner    = "globex-analytics"
    workload = "datalake"
  }
}
