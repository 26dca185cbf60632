"""How engines make it fast, as the page shows it: speculative decoding with prompt lookup, a model of paged KV blocks, the batched pass measured."""
