"""Layer 7 of the tape: analyses of a recording: Taylor mode (`taylor`), sparsity detection
(`sparsity`) and inverse accumulation (`inverse*`)."""
