"""Layer 6 of the tape: recording f with its contexts (`record`) and the per-thread replays of one
recording (`replay`)."""
