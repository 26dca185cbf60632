"""The classroom: lesson files and their answers, rooms a class follows, the class as the sampler, the guessing game."""
