"""Trees of arrays: flattening (`registry`), one tree's description (`info`), and the codec between a
structured call and its flat problem (`codec`)."""
