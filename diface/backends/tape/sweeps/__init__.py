"""Layer 3 of the tape, running a tape: on any values (`interpret`, which records the sweeps where the
values are traced), the compiled forward replay and reverse sweep over planned buffers (`compile`), the
forward-mode sweep (`tangent`) and the identity seeds of basis sweeps (`seeds`)."""
