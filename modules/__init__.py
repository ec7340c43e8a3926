"""CDKTF constructs of the tenant lake, one per file.  Only this package and ``infra/app.py`` import cdktf."""
