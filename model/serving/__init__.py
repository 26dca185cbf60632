"""What a server adds around the model's core: every user's session and the model registry, their admission, and the core in a process of its own."""
