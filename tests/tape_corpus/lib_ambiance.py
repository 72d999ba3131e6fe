"""ambiance (aeronautics, the ICAO standard atmosphere 1993): the properties of the atmosphere at a
geometric height, layer by layer (each height's layer found with masks, the layer's constants gathered
into arrays written in place). x is a height [m] spanning the troposphere and the stratosphere, so the
points lie in different layers; masked points: below sea level, and the isothermal layers (tropopause,
stratopause), where the library selects another formula by mask (`beta == 0`). Not at sea level itself:
the table's rounded base pressures make a small jump there."""

from __future__ import annotations

from ._harness import Case
from ._tables import Row, build

LIBRARY = "ambiance"
MODULE = "ambiance"

HEIGHTS = (500.0, 45000.0)
ISOTHERMAL = ((-1000.0, 15000.0, 48000.0),)

PROPERTIES = (
    "temperature",
    "temperature_in_celsius",
    "pressure",
    "density",
    "speed_of_sound",
    "dynamic_viscosity",
    "kinematic_viscosity",
    "thermal_conductivity",
    "mean_free_path",
    "mean_particle_speed",
    "collision_frequency",
    "number_density",
    "grav_accel",
    "pressure_scale_height",
    "specific_weight",
    "H",
)


def _property(name: str) -> Row:
    return Row(
        f"Atmosphere.{name}",
        None,
        *HEIGHTS,
        masked=ISOTHERMAL,
        target="Atmosphere",
        call=lambda atmosphere, x: getattr(atmosphere(x), name),
    )


def rows() -> list[Row]:
    return [
        *(_property(name) for name in PROPERTIES),
        Row("Atmosphere.geom2geop_height", "h", *HEIGHTS, masked=(0.0,)),
        Row("Atmosphere.geop2geom_height", "H", *HEIGHTS, masked=(0.0,)),
        Row("Atmosphere.t2T", "t", -50.0, 30.0, masked=(0.0,)),
        Row("Atmosphere.T2t", "T", 220.0, 300.0),
        # the inverses: SciPy's Newton iteration on the forward model
        Row("Atmosphere.from_pressure", None, 2000.0, 90000.0, call=lambda fn, x: fn(x).h),
        Row("Atmosphere.from_density", None, 0.05, 1.1, call=lambda fn, x: fn(x).h),
    ]


def cases() -> list[Case]:
    import ambiance

    return build(LIBRARY, ambiance, rows())
