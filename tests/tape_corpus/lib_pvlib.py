"""pvlib (solar energy): irradiance transposition and decomposition, clear-sky models, air mass, cell
temperature, the single-diode model, inverters, incidence-angle modifiers, row shading and the NREL solar
position algorithm (pvlib.spa, written for NumPy arrays). x is a solar zenith angle [deg], an irradiance
[W/m²], a tilt, a time or a temperature. Masked points: the night (a zenith beyond 90°, the sun below
the horizon), incidence from behind the panel, an inverter below its start-up power or clipping, a
clamped precipitable water, a zero input."""

from __future__ import annotations

import numpy as np

from ._harness import Case
from ._tables import Row, build

LIBRARY = "pvlib"
MODULE = "pvlib"

ZENITH = (15.0, 80.0)
NIGHT = 105.0
GHI = (150.0, 900.0)
POA = (100.0, 1000.0)
TILT = (5.0, 60.0)
AOI = (5.0, 80.0)
BEHIND = 95.0
DOY = (20.0, 340.0)
SUN = {"surface_tilt": 30.0, "surface_azimuth": 180.0, "solar_azimuth": 150.0}
DIODE = {"saturation_current": 1e-9, "resistance_series": 0.3, "resistance_shunt": 300.0, "nNsVth": 1.8}
MODULE_SAPM = {"A0": 0.928, "A1": 0.068, "A2": -0.0077, "A3": 0.0001, "A4": -0.000002}
INVERTER = {
    "Paco": 2500.0,
    "Pdco": 2600.0,
    "Vdco": 300.0,
    "Pso": 20.0,
    "C0": -1e-6,
    "C1": -2e-5,
    "C2": 1e-3,
    "C3": -3e-4,
    "Pnt": 0.5,
}
#: a day at Golden, Colorado (UTC): 08:00 to 17:00 local; night: 23:00 local the evening before
DAY = (1718978400.0, 1719010800.0)
NIGHT_TIME = 1718946000.0
LAT, LON = 39.74, -105.18


def _spa_chain(spa: object, unixtime: np.ndarray) -> dict[str, np.ndarray]:
    """The intermediate quantities of solar_position_numpy, as pvlib computes them."""
    s = spa
    jd = s.julian_day(unixtime)  # type: ignore[attr-defined]
    jde = s.julian_ephemeris_day(jd, 67.0)  # type: ignore[attr-defined]
    jce = s.julian_ephemeris_century(jde)  # type: ignore[attr-defined]
    jme = s.julian_ephemeris_millennium(jce)  # type: ignore[attr-defined]
    return {"jd": jd, "jce": jce, "jme": jme}


def _nutation(fn: object, spa: object, jce: np.ndarray) -> np.ndarray:
    s = spa
    x = [
        s.mean_elongation(jce),  # type: ignore[attr-defined]
        s.mean_anomaly_sun(jce),  # type: ignore[attr-defined]
        s.mean_anomaly_moon(jce),  # type: ignore[attr-defined]
        s.moon_argument_latitude(jce),  # type: ignore[attr-defined]
        s.moon_ascending_longitude(jce),  # type: ignore[attr-defined]
    ]
    out = np.empty((2, len(x[0])))
    fn(jce, *x, out)  # type: ignore[operator]
    return out


def rows() -> list[Row]:
    import pvlib

    spa = pvlib.spa
    jce_range = (0.2442, 0.2443)  # Julian ephemeris centuries of mid-2024
    return [
        # irradiance on a tilted plane: the night makes the beam component zero (max(0, cos aoi))
        Row("irradiance.aoi_projection", "solar_zenith", *ZENITH, SUN, masked=(NIGHT,)),
        Row("irradiance.aoi", "solar_zenith", *ZENITH, SUN),
        Row("irradiance.beam_component", "solar_zenith", *ZENITH, {**SUN, "dni": 800.0}, masked=(NIGHT,)),
        Row(
            "irradiance.poa_components",
            "aoi",
            *AOI,
            {"dni": 800.0, "poa_sky_diffuse": 100.0, "poa_ground_diffuse": 20.0},
            masked=(BEHIND,),
            pick="poa_global",
        ),
        Row("irradiance.get_ground_diffuse", "surface_tilt", *TILT, {"ghi": 600.0}),
        Row("irradiance.isotropic", "surface_tilt", *TILT, {"dhi": 100.0}, masked=(0.0,)),
        Row("irradiance.klucher", "solar_zenith", *ZENITH, {**SUN, "dhi": 100.0, "ghi": 500.0}),
        Row(
            "irradiance.haydavies",
            "solar_zenith",
            *ZENITH,
            {**SUN, "dhi": 100.0, "dni": 600.0, "dni_extra": 1367.0},
            masked=(NIGHT,),
        ),
        Row(
            "irradiance.reindl",
            "solar_zenith",
            *ZENITH,
            {**SUN, "dhi": 100.0, "dni": 600.0, "ghi": 500.0, "dni_extra": 1367.0},
            masked=(NIGHT,),
        ),
        Row("irradiance.king", "solar_zenith", *ZENITH, {"surface_tilt": 30.0, "dhi": 100.0, "ghi": 500.0}),
        Row(
            "irradiance.perez",
            "dhi",
            80.0,
            200.0,
            {**SUN, "dni": 600.0, "dni_extra": 1367.0, "solar_zenith": 40.0, "airmass": 1.3},
        ),
        Row(
            "irradiance.perez_driesse",
            "solar_zenith",
            *ZENITH,
            {**SUN, "dhi": 100.0, "dni": 600.0, "dni_extra": 1367.0, "airmass": 1.5},
        ),
        Row(
            "irradiance.get_total_irradiance",
            "solar_zenith",
            *ZENITH,
            {**SUN, "dni": 800.0, "ghi": 500.0, "dhi": 100.0},
            masked=(NIGHT,),
            pick="poa_global",
        ),
        Row(
            "irradiance.get_sky_diffuse",
            "solar_zenith",
            *ZENITH,
            {**SUN, "dni": 800.0, "ghi": 500.0, "dhi": 100.0, "dni_extra": 1367.0, "model": "haydavies"},
        ),
        Row("irradiance.clearsky_index", "ghi", *GHI, {"ghi_clear": 950.0}, masked=(2500.0,)),
        Row(
            "irradiance.clearness_index",
            "solar_zenith",
            *ZENITH,
            {"ghi": 400.0, "extra_radiation": 1367.0},
            masked=(NIGHT,),
        ),
        Row("irradiance.clearness_index_zenith_independent", "clearness_index", 0.2, 0.8, {"airmass": 1.5}),
        Row("irradiance.disc", "ghi", *GHI, {"solar_zenith": 40.0, "datetime_or_doy": 150}, pick="dni"),
        Row("irradiance.erbs", "ghi", *GHI, {"zenith": 40.0, "datetime_or_doy": 150}, pick="dni"),
        Row("irradiance.erbs_driesse", "ghi", *GHI, {"zenith": 40.0, "datetime_or_doy": 150}, pick="dni"),
        Row("irradiance.orgill_hollands", "ghi", *GHI, {"zenith": 40.0, "datetime_or_doy": 150}, pick="dni"),
        Row("irradiance.boland", "ghi", *GHI, {"solar_zenith": 40.0, "datetime_or_doy": 150}, pick="dni"),
        Row("irradiance.louche", "ghi", *GHI, {"solar_zenith": 40.0, "datetime_or_doy": 150}, pick="dni"),
        Row("irradiance.campbell_norman", "zenith", *ZENITH, {"transmittance": 0.75}, pick="ghi"),
        Row("irradiance.dni", "ghi", *GHI, {"dhi": 100.0, "zenith": 40.0}),
        Row("irradiance.get_extra_radiation", "datetime_or_doy", *DOY),
        # the atmosphere
        Row("atmosphere.pres2alt", "pressure", 60000.0, 101000.0),
        Row("atmosphere.alt2pres", "altitude", 10.0, 3000.0, masked=(0.0,)),
        Row("atmosphere.get_absolute_airmass", "airmass_relative", 1.0, 5.0, {"pressure": 90000.0}),
        Row("atmosphere.get_relative_airmass", "zenith", *ZENITH),
        Row("atmosphere.gueymard94_pw", "temp_air", 0.0, 35.0, {"relative_humidity": 60.0}),
        Row("atmosphere.rh_from_tdew", "temp_dew", 0.0, 20.0, {"temp_air": 25.0}),
        Row("atmosphere.tdew_from_rh", "relative_humidity", 20.0, 90.0, {"temp_air": 25.0}),
        Row("atmosphere.bird_hulstrom80_aod_bb", "aod380", 0.1, 0.5, {"aod500": 0.1}),
        Row("atmosphere.kasten96_lt", "airmass_absolute", 1.0, 5.0, {"precipitable_water": 1.5, "aod_bb": 0.1}),
        Row("atmosphere.angstrom_aod_at_lambda", "aod0", 0.05, 0.5, {"lambda0": 500.0}),
        Row("atmosphere.angstrom_alpha", "aod1", 0.05, 0.5, {"lambda1": 500.0, "aod2": 0.1, "lambda2": 1000.0}),
        Row(
            "atmosphere.windspeed_powerlaw",
            "wind_speed_reference",
            1.0,
            10.0,
            {"height_reference": 10.0, "height_desired": 2.0, "exponent": 0.14},
        ),
        # cell and module temperature
        Row(
            "temperature.sapm_cell",
            "poa_global",
            *POA,
            {"temp_air": 25.0, "wind_speed": 2.0, "a": -3.47, "b": -0.0594, "deltaT": 3.0},
            masked=(0.0,),
        ),
        Row(
            "temperature.sapm_module",
            "poa_global",
            *POA,
            {"temp_air": 25.0, "wind_speed": 2.0, "a": -3.47, "b": -0.0594},
        ),
        Row(
            "temperature.sapm_cell_from_module", "module_temperature", 20.0, 60.0, {"poa_global": 800.0, "deltaT": 3.0}
        ),
        Row("temperature.pvsyst_cell", "poa_global", *POA, {"temp_air": 25.0}, masked=(0.0,)),
        Row("temperature.faiman", "poa_global", *POA, {"temp_air": 25.0}),
        Row("temperature.faiman_rad", "poa_global", *POA, {"temp_air": 25.0, "ir_down": 350.0}),
        Row("temperature.ross", "poa_global", *POA, {"temp_air": 25.0, "noct": 45.0}),
        Row(
            "temperature.noct_sam",
            "poa_global",
            *POA,
            {"temp_air": 25.0, "wind_speed": 2.0, "noct": 45.0, "module_efficiency": 0.2},
        ),
        Row(
            "temperature.generic_linear",
            "poa_global",
            *POA,
            {
                "temp_air": 25.0,
                "wind_speed": 2.0,
                "u_const": 29.0,
                "du_wind": 0.0,
                "module_efficiency": 0.15,
                "absorptance": 0.9,
            },
        ),
        # the single-diode model and its parameters
        Row(
            "pvsystem.calcparams_desoto",
            "effective_irradiance",
            200.0,
            1000.0,
            {
                "temp_cell": 35.0,
                "alpha_sc": 0.004,
                "a_ref": 1.5,
                "I_L_ref": 6.0,
                "I_o_ref": 1e-10,
                "R_sh_ref": 300.0,
                "R_s": 0.3,
            },
            pick=3,
        ),
        Row(
            "pvsystem.calcparams_cec",
            "effective_irradiance",
            200.0,
            1000.0,
            {
                "temp_cell": 35.0,
                "alpha_sc": 0.004,
                "a_ref": 1.5,
                "I_L_ref": 6.0,
                "I_o_ref": 1e-10,
                "R_sh_ref": 300.0,
                "R_s": 0.3,
                "Adjust": 10.0,
            },
            pick=0,
        ),
        Row(
            "pvsystem.calcparams_pvsyst",
            "effective_irradiance",
            200.0,
            1000.0,
            {
                "temp_cell": 35.0,
                "alpha_sc": 0.004,
                "gamma_ref": 1.1,
                "mu_gamma": -0.0003,
                "I_L_ref": 6.0,
                "I_o_ref": 1e-10,
                "R_sh_ref": 300.0,
                "R_sh_0": 1000.0,
                "R_s": 0.3,
                "cells_in_series": 60,
            },
            pick=3,
        ),
        Row("pvsystem.singlediode", "photocurrent", 3.0, 8.0, DIODE, pick="p_mp"),
        Row("pvsystem.max_power_point", "photocurrent", 3.0, 8.0, DIODE, pick="p_mp"),
        Row("pvsystem.v_from_i", "current", 1.0, 5.0, {"photocurrent": 6.0, **DIODE}),
        Row("pvsystem.i_from_v", "voltage", 5.0, 30.0, {"photocurrent": 6.0, **DIODE}),
        Row(
            "pvsystem.pvwatts_dc", "effective_irradiance", *POA, {"temp_cell": 35.0, "pdc0": 300.0, "gamma_pdc": -0.004}
        ),
        Row("pvsystem.pvwatts_losses", "soiling", 0.5, 5.0),
        Row("pvsystem.dc_ohms_from_percent", "vmp_ref", 30.0, 40.0, {"imp_ref": 8.0, "dc_ohmic_percent": 1.5}),
        Row("pvsystem.dc_ohmic_losses", "current", 1.0, 9.0, {"resistance": 0.5}),
        Row("singlediode.estimate_voc", "photocurrent", 3.0, 8.0, {"saturation_current": 1e-9, "nNsVth": 1.8}),
        Row("singlediode.bishop88", "diode_voltage", 5.0, 35.0, {"photocurrent": 6.0, **DIODE}, pick=0),
        Row("singlediode.bishop88_i_from_v", "voltage", 5.0, 30.0, {"photocurrent": 6.0, **DIODE}),
        Row("singlediode.bishop88_v_from_i", "current", 1.0, 5.0, {"photocurrent": 6.0, **DIODE}),
        Row("singlediode.bishop88_mpp", "photocurrent", 3.0, 8.0, DIODE, pick=2),
        Row("singlediode.batzelis", "photocurrent", 3.0, 8.0, DIODE, pick="p_mp"),
        Row(
            "pvarray.pvefficiency_adr",
            "effective_irradiance",
            *POA,
            {"temp_cell": 35.0, "k_a": 1.0, "k_d": -6.0, "tc_d": 0.02, "k_rs": 0.05, "k_rsh": 0.1},
        ),
        Row("pvarray.huld", "effective_irradiance", *POA, {"temp_mod": 35.0, "pdc0": 300.0, "cell_type": "csi"}),
        Row(
            "pvarray.batzelis",
            "effective_irradiance",
            *POA,
            {
                "temp_cell": 35.0,
                "v_mp": 30.0,
                "i_mp": 8.0,
                "v_oc": 37.0,
                "i_sc": 8.5,
                "alpha_sc": 0.0005,
                "beta_voc": -0.003,
            },
            pick="p_mp",
        ),
        # inverters: below the start-up power (night tare) and clipping at the rated power
        Row("inverter.sandia", "p_dc", 300.0, 2400.0, {"v_dc": 300.0, "inverter": INVERTER}, masked=(5.0, 4000.0)),
        Row("inverter.pvwatts", "pdc", 300.0, 3500.0, {"pdc0": 4000.0}, masked=(0.0, 5000.0)),
        # incidence-angle modifiers: zero from behind the panel
        Row("iam.ashrae", "aoi", *AOI, masked=(BEHIND,)),
        Row("iam.physical", "aoi", *AOI, masked=(0.0, BEHIND)),
        Row("iam.martin_ruiz", "aoi", *AOI, masked=(BEHIND,)),
        Row("iam.martin_ruiz_diffuse", "surface_tilt", *TILT, pick="sky"),
        Row(
            "iam.interp",
            "aoi",
            *AOI,
            {"theta_ref": np.array([0.0, 35.0, 65.0, 90.0]), "iam_ref": np.array([1.0, 0.98, 0.85, 0.0])},
        ),
        Row("iam.schlick", "aoi", *AOI, masked=(BEHIND,)),
        Row("iam.schlick_diffuse", "surface_tilt", *TILT, pick="sky"),
        # row-to-row shading and view factors
        Row("shading.ground_angle", "surface_tilt", *TILT, {"gcr": 0.4, "slant_height": 0.5}),
        Row("shading.masking_angle", "surface_tilt", *TILT, {"gcr": 0.4, "slant_height": 0.5}),
        Row("shading.masking_angle_passias", "surface_tilt", *TILT, {"gcr": 0.4}),
        Row("shading.sky_diffuse_passias", "masking_angle", 5.0, 30.0),
        Row(
            "shading.projected_solar_zenith_angle",
            "solar_zenith",
            *ZENITH,
            {"solar_azimuth": 150.0, "axis_tilt": 0.0, "axis_azimuth": 180.0},
        ),
        Row(
            "shading.shaded_fraction1d",
            "solar_zenith",
            75.0,
            88.0,
            {
                "solar_azimuth": 100.0,
                "axis_azimuth": 180.0,
                "shaded_row_rotation": -30.0,
                "collector_width": 2.0,
                "pitch": 5.0,
            },
            masked=(10.0,),
        ),
        Row("bifacial.utils.vf_row_sky_2d", "surface_tilt", *TILT, {"gcr": 0.4, "x": 0.5}),
        Row("bifacial.utils.vf_row_sky_2d_integ", "surface_tilt", *TILT, {"gcr": 0.4}),
        Row("bifacial.utils.vf_row_ground_2d", "surface_tilt", *TILT, {"gcr": 0.4, "x": 0.5}),
        Row("bifacial.utils.vf_row_ground_2d_integ", "surface_tilt", *TILT, {"gcr": 0.4}),
        Row("bifacial.utils.vf_ground_sky_2d", "rotation", *TILT, {"gcr": 0.4, "x": 0.5, "pitch": 5.0, "height": 1.5}),
        # clear-sky models: zero at night
        Row(
            "clearsky.ineichen",
            "apparent_zenith",
            *ZENITH,
            {"airmass_absolute": 1.5, "linke_turbidity": 3.0},
            masked=(NIGHT,),
            pick="ghi",
        ),
        Row("clearsky.simplified_solis", "apparent_elevation", 10.0, 75.0, masked=(-10.0,), pick="ghi"),
        Row(
            "clearsky.bird",
            "zenith",
            *ZENITH,
            {"airmass_relative": 1.5, "aod380": 0.15, "aod500": 0.1, "precipitable_water": 1.5},
            masked=(NIGHT,),
            pick="ghi",
        ),
        # spectral mismatch: the precipitable water is clamped to [0.1, 8] cm
        Row("spectrum.spectral_factor_sapm", "airmass_absolute", 1.0, 5.0, {"module": MODULE_SAPM}),
        Row(
            "spectrum.spectral_factor_firstsolar",
            "precipitable_water",
            0.5,
            4.0,
            {"airmass_absolute": 1.5, "module_type": "cdte"},
            masked=(0.05,),
        ),
        Row(
            "spectrum.spectral_factor_caballero",
            "precipitable_water",
            0.5,
            4.0,
            {"airmass_absolute": 1.5, "aod500": 0.1, "module_type": "cdte"},
        ),
        Row(
            "spectrum.spectral_factor_pvspec",
            "airmass_absolute",
            1.0,
            5.0,
            {"clearsky_index": 0.8, "module_type": "fs4-2"},
        ),
        Row("spectrum.spectral_factor_jrc", "airmass", 1.0, 5.0, {"clearsky_index": 0.8, "module_type": "cdte"}),
        # the sun's position
        Row("solarposition.equation_of_time_spencer71", "dayofyear", *DOY),
        Row("solarposition.equation_of_time_pvcdrom", "dayofyear", *DOY),
        Row("solarposition.declination_spencer71", "dayofyear", *DOY),
        Row("solarposition.declination_cooper69", "dayofyear", *DOY),
        Row("solarposition.solar_zenith_analytical", "latitude", 0.2, 1.0, {"hourangle": 0.3, "declination": 0.2}),
        Row(
            "solarposition.solar_azimuth_analytical",
            None,
            -1.0,
            1.0,
            call=lambda fn, x: fn(0.7, x, 0.2, pvlib.solarposition.solar_zenith_analytical(0.7, x, 0.2)),
        ),
        Row(
            "tracking.singleaxis",
            "apparent_zenith",
            20.0,
            70.0,
            {"solar_azimuth": 110.0, "max_angle": 50.0},
            pick="tracker_theta",
            masked=(88.0,),
        ),
        Row("tracking.calc_surface_orientation", "tracker_theta", 5.0, 40.0, pick="surface_tilt"),
        Row("tracking.calc_axis_tilt", "slope_tilt", 1.0, 10.0, {"slope_azimuth": 180.0, "axis_azimuth": 170.0}),
        # a function of scalars (it takes np.dot of a 3-vector): called per entry, as one would
        Row(
            "tracking.calc_cross_axis_tilt",
            None,
            160.0,
            200.0,
            call=lambda fn, x: np.stack([fn(180.0, 5.0, azimuth, 3.0) for azimuth in x]),
        ),
        Row(
            "albedo.inland_water_dvoracek", "solar_elevation", 10.0, 80.0, {"surface_condition": "clear_water_no_waves"}
        ),
        Row(
            "transformer.simple_efficiency",
            "input_power",
            100.0,
            900.0,
            {"no_load_loss": 0.002, "load_loss": 0.01, "transformer_rating": 1000.0},
        ),
        Row("snow.dc_loss_nrel", "snow_coverage", 0.13, 0.87, {"num_strings": 4}),
        # pvlib.spa: the NREL solar position algorithm in NumPy
        Row("spa.julian_day", "unixtime", *DAY, scale=86400.0),
        Row("spa.heliocentric_longitude", "jme", 0.02442, 0.02443, scale=1e-3),
        Row("spa.heliocentric_radius_vector", "jme", 0.02442, 0.02443, scale=1e-3),
        Row("spa.mean_elongation", "julian_ephemeris_century", *jce_range, scale=1e-3),
        Row("spa.longitude_obliquity_nutation", None, *jce_range, scale=1e-3, call=lambda fn, x: _nutation(fn, spa, x)),
        Row("spa.mean_ecliptic_obliquity", "julian_ephemeris_millennium", 0.02442, 0.02443, scale=1e-3),
        Row(
            "spa.topocentric_astronomers_azimuth",
            "topocentric_local_hour_angle",
            -50.0,
            70.0,
            {"topocentric_sun_declination": 23.0, "observer_latitude": LAT},
        ),
        Row(
            "spa.atmospheric_refraction_correction",
            "topocentric_elevation_angle_wo_atmosphere",
            5.0,
            60.0,
            {"local_pressure": 1013.0, "local_temp": 12.0, "atmos_refract": 0.5667},
            masked=(-5.0,),
        ),
        Row(
            "spa.solar_position_numpy",
            "unixtime",
            *DAY,
            {
                "lat": LAT,
                "lon": LON,
                "elev": 1800.0,
                "pressure": 820.0,
                "temp": 20.0,
                "delta_t": 67.0,
                "atmos_refract": 0.5667,
                "numthreads": 1,
            },
            masked=(NIGHT_TIME,),
            scale=86400.0,
            pick=0,
        ),
        Row(
            "spa.earthsun_distance",
            "unixtime",
            *DAY,
            {"delta_t": 67.0, "numthreads": 1},
            scale=3600.0,
        ),
    ]


def cases() -> list[Case]:
    import pvlib

    return build(LIBRARY, pvlib, rows())
