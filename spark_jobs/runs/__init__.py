"""A run's life: its Spark session, its leases, its manifest, its lineage events and monitoring signals, and `status` reading them back."""
