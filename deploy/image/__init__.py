"""The container image's helpers: its base built from Debian's packages, the balancer of compose.yaml, its test."""
