# acme: GDPR data, so it stays in the EU (Ireland).
include "root" {
  path = find_in_parent_folders("root.hcl")
}

inputs = {
  tenant_id           = "acme"
  region              = "eu-west-1"
  data_classification = ["gdpr"]
  # The sample tenants target the local emulator: 123456789012 is moto's fixed account, and the VPC
  # is the fixture VPC the local network creates (`python -m infra.local.network.fixture_ids id acme`).
  # For TENANTLAKE_ENV=aws, put the real account and VPC ids here.
  account_id = "123456789012"
  vpc_ids    = ["vpc-6044ec6848a5d426b"]
  tags = {
    owner    = "acme-data-team"
    workload = "datalake"
  }
}
