"""The classroom: lessons' questions and their answers, the class as the sampler, the guessing game."""
