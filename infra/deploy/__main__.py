import sys

from infra.deploy.cli import main

sys.exit(main())
