"""Layer 6 of the tape: analyses of a recording: Taylor mode (`taylor`), sparsity detection
(`sparsity`, `sparsity_spectral`) and inverse accumulation (`inverse*`)."""
