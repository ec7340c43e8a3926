"""The lake every command and job works on: where it is and its layout (`config`), its Iceberg catalog (`catalog`), and how a failure reads (`failures`)."""
