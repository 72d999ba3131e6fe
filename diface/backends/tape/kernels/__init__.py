"""Layer 6 of the tape, what the core calls: per-thread replays (`replay`), first-order kernels
(`first_order`), linearizations (`linearize`), second order, sparse Jacobians and the boundary."""
