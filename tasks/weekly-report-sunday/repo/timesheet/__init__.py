"""Hours tracking with plain CSV storage."""
