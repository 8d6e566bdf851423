"""Test helpers: real loopback servers and paths to the offline mirror."""
