"""Layer 5 of the tape: recording f (`record`), running a tape on any values (`interpret`), the compiled
forward replay and reverse sweep (`compile`), the forward-mode sweep (`tangent`) and basis seeds (`seeds`)."""
