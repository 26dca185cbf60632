"""Serving a class: every user's session and the one way to open one (with its admission), and what makes serving fast (speculative decoding, paged blocks, measured throughput)."""
