"""Reverse mode at bounded memory: `checkpoint` (a function whose intermediates are recomputed, not
kept), `scan` (a loop of known length on a binomial checkpointing schedule; `loop`: the carry's checks
and the plain loop every engine shares; `nested`: the scan made of an engine's `checkpoint` alone, for
autograd, TensorFlow and PyTensor), the schedules (`schedule`), and the registry through which
each engine gives its own mechanism (`engines`); `budget`: memory budgets as users write them
(`AutoTape(memory="1GB")`)."""
