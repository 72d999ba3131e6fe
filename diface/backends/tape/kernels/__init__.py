"""Layer 7 of the tape, what the core calls: first-order kernels (`first_order`), linearizations
(`linearize`), second order (`second_order`), sparse Jacobians (`sparse`) and the boundary (`boundary`)."""
