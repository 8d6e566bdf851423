"""Reliability and security: upstream faults, release integrity, hostile input, load."""
