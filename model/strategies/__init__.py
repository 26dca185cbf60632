"""Paths beyond one sample: beam search, the sampler race, self-consistency, constrained decoding."""
