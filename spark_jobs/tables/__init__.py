"""Working on a lake's Iceberg tables from the command line: query them, maintain them, tag their columns, and plan what a contract change does to them."""
