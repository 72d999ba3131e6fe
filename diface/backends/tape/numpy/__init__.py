"""Layer 5 of the tape: what each NumPy function records, registered with `data.dispatch` when imported
(`protocols` imports them all); `hooks` and `intercept`: Python-level functions made to dispatch."""
