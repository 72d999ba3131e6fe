"""seawater (EOS-80, oceanography): the equation of state of seawater and what follows from it, written
with NumPy arrays. x is a temperature [°C], salinity [psu], pressure [dbar], latitude [deg] or a
conductivity ratio; the other arguments are a typical mid-ocean water mass. Masked points: a zero
temperature and a zero pressure (the surface), where polynomials meet their constant terms."""

from __future__ import annotations

import warnings
from typing import Any

import numpy as np

from ._harness import Case
from ._tables import Row, build

LIBRARY = "seawater"
MODULE = "seawater"

S, T, P = 35.0, 10.0, 1000.0
T_RANGE = (1.0, 28.0)
#: a profile: four depths of one station (the geostrophic functions difference along the first axis)
P_PROFILE = np.array([[0.0], [250.0], [500.0], [1000.0]])
S_PROFILE = np.full((4, 1), 35.0)


def _first(result: Any) -> Any:
    return result[0]


def rows() -> list[Row]:
    st = {"s": S, "p": P}
    return [
        Row("adtg", "t", *T_RANGE, st, masked=(0.0,)),
        Row("alpha", "t", *T_RANGE, st, masked=(0.0,)),
        Row("aonb", "t", *T_RANGE, st),
        Row("beta", "t", *T_RANGE, st),
        Row("cndr", "s", 30.0, 37.0, {"t": np.full(3, T), "p": np.full(3, P)}),
        Row("cp", "t", *T_RANGE, st, masked=(0.0,)),
        Row("dens", "t", *T_RANGE, st, masked=(0.0,)),
        Row("dens0", "t", *T_RANGE, {"s": S}, masked=(0.0,)),
        Row("dpth", "p", 10.0, 5000.0, {"lat": 30.0}, masked=(0.0,)),
        Row("f", "lat", 10.0, 80.0),
        Row("fp", "s", 30.0, 37.0, {"p": P}),
        Row("g", "lat", 10.0, 80.0, {"z": -100.0}),
        Row("pden", "t", *T_RANGE, {"s": S, "p": P, "pr": 0.0}),
        Row("pres", "depth", 10.0, 5000.0, {"lat": 30.0}, masked=(0.0,)),
        Row("ptmp", "t", *T_RANGE, {"s": S, "p": P, "pr": 0.0}, masked=(0.0,)),
        Row("salds", "rtx", 0.9, 1.1, {"delt": 5.0}),
        Row("salrp", "r", 0.8, 1.2, {"t": T, "p": P}),
        Row("salrt", "t", *T_RANGE, masked=(0.0,)),
        Row("sals", "rt", 0.8, 1.2, {"t": T}),
        Row("salt", "r", 0.8, 1.2, {"t": T, "p": P}),
        Row("satAr", "t", *T_RANGE, {"s": S}),
        Row("satN2", "t", *T_RANGE, {"s": S}),
        Row("satO2", "t", *T_RANGE, {"s": S}),
        Row("seck", "t", *T_RANGE, st, masked=(0.0,)),
        Row("smow", "t", *T_RANGE, masked=(0.0,)),
        Row("svan", "t", *T_RANGE, st),
        Row("svel", "t", *T_RANGE, st, masked=(0.0,)),
        Row("swvel", "depth", 2.0, 80.0, {"length": 100.0}),
        Row("temp", "pt", *T_RANGE, {"s": S, "p": P, "pr": 0.0}),
        Row("library.T68conv", "T90", *T_RANGE),
        Row("library.T90conv", "t", *T_RANGE),
        Row("dist", None, 20.0, 40.0, call=lambda fn, x: _first(fn(x, np.array([-60.0, -58.0, -57.0])))),
        Row(
            "bfrq",
            None,
            2.0,
            20.0,
            shape=(4, 1),
            call=lambda fn, x: _first(fn(S_PROFILE, x, P_PROFILE, lat=30.0)),
            label="bfrq",
        ),
        Row("gpan", None, 2.0, 20.0, shape=(4, 1), call=lambda fn, x: fn(S_PROFILE, x, P_PROFILE)),
        Row("gvel", "ga", 0.5, 3.0, {"lat": np.array([-22.0, -21.5, -21.0]), "lon": -30.0}, shape=(2, 3)),
    ]


def cases() -> list[Case]:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # "The seawater library is deprecated! Please use gsw instead."
        import seawater

    return build(LIBRARY, seawater, rows())
