"""Layer 1 of the tape, its data: the tape itself (`graph`: slots, nodes, the recorder), index keys
(`index`), where a call happens, for messages (`sites`, `messages`), buffer planning (`buffers`) and the
registry NumPy's protocols on a traced array go through (`dispatch`)."""
