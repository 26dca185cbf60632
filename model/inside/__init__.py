"""Inside the model, over a whole text: the chain rule, teacher forcing (training's parallel pass), the logit lens, tokenizers compared."""
