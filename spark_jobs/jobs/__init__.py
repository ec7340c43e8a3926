"""Orchestration: one job per layer (bronze, silver, gold), each writing a run manifest."""
