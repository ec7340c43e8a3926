"""``python -m infra.terragrunt``: see ``infra.terragrunt.cli``."""
import sys

from infra.terragrunt.cli import main

sys.exit(main())
