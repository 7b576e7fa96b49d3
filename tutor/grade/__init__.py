"""Teacher mode: `attn-tutor grade`, a whole class through one warm worker (see command.py)."""
