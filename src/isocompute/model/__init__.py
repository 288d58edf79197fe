"""The policy model: the embedded tiny base model (tokenizer, architecture,
pretraining) and loading of any Hugging Face model directory."""
