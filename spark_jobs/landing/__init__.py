"""Landing data in the lake: check and upload files (`land`), the file checks, and the ingest-writer credentials."""
