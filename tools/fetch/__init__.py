"""Fetch pinned upstream inputs into vendor/: the CRDs and the HyperPod dependencies chart."""
