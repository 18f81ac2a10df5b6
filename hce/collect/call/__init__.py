"""One call to an OpenAI-compatible endpoint: what is sent, to which endpoint under which limits,
what it costs, and the reply read into log columns."""
