"""numpy-financial (finance): time-value-of-money functions of NumPy arrays. x is an interest rate per
period, a cash-flow series or a present value. Masked point: a zero rate, where the library switches
(`np.where(rate == 0, ...)`) to the limit of its formula."""

from __future__ import annotations

from ._harness import Case
from ._tables import Row, build

LIBRARY = "numpy-financial"
MODULE = "numpy_financial"

#: a project's cash flows: an investment, then returns (per-entry ranges)
FLOWS_LO = (-110.0, 30.0, 50.0, 45.0, 15.0)
FLOWS_HI = (-90.0, 45.0, 65.0, 60.0, 25.0)


def rows() -> list[Row]:
    rate = (0.002, 0.01)
    return [
        Row("fv", "rate", *rate, {"nper": 120, "pmt": -100.0, "pv": -1000.0}, masked=(0.0,)),
        Row("pmt", "rate", *rate, {"nper": 360, "pv": 200000.0}, masked=(0.0,)),
        Row("pv", "rate", *rate, {"nper": 120, "pmt": -100.0, "fv": 0.0}, masked=(0.0,)),
        Row("ipmt", "rate", *rate, {"per": 5, "nper": 24, "pv": 2000.0}, masked=(0.0,)),
        Row("ppmt", "rate", *rate, {"per": 5, "nper": 24, "pv": 2000.0}, masked=(0.0,)),
        Row("nper", "rate", 0.004, 0.008, {"pmt": -150.0, "pv": 8000.0}),
        Row("npv", "values", FLOWS_LO, FLOWS_HI, {"rate": 0.08}, shape=(5,)),
        Row("irr", "values", FLOWS_LO, FLOWS_HI, shape=(5,)),
        Row("mirr", "values", FLOWS_LO, FLOWS_HI, {"finance_rate": 0.1, "reinvest_rate": 0.12}, shape=(5,)),
        Row("rate", "pv", 1800.0, 2300.0, {"nper": 24, "pmt": -100.0, "fv": 0.0}),
    ]


def cases() -> list[Case]:
    import numpy_financial

    return build(LIBRARY, numpy_financial, rows())
