"""A run of a design: concurrent or batch, resumed without losing or repeating an attempt, one
writer per log, every reply on disk first, stopped by budget, errors or a stopping rule."""
