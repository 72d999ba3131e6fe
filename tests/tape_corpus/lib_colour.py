"""colour-science (colour science): colour models and their inverses, transfer functions (camera log
encodings, display EOTFs/OETFs), lightness and luminance scales, colour differences, correlated colour
temperature, chromatic adaptation, colour appearance models, Rayleigh scattering, Michaelis-Menten
kinetics, Munsell values, the contrast sensitivity of the eye and the library's algebra. All of it is
NumPy code behind `as_float_array` conversions and domain-range scaling.

x is a pair of colours (XYZ, RGB, Lab...: shape (2, 3)), a signal value, a luminance, a temperature, a
wavelength. Inverses are called at the forward model's values of the forward points (`Row.via`).
Masked points: a transfer function's input below its linear toe or black (a zero), negative (mirrored
or clamped) and over range; a CIE lightness below its linear segment; the low and high CCT branches."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from ._harness import Case
from ._tables import Row, build

LIBRARY = "colour"
MODULE = "colour"

#: two colours; domain [0, 1] and [0, 100]
XYZ = ((0.10, 0.11, 0.08), (0.60, 0.65, 0.70))
XYZ100 = ((10.0, 11.0, 8.0), (60.0, 65.0, 70.0))
RGB = ((0.12, 0.30, 0.08), (0.85, 0.70, 0.60))
XY = ((0.28, 0.29), (0.42, 0.40))
PAIR = (2, 3)
D65 = np.array([95.047, 100.0, 108.883])
ILLUMINANT_A = np.array([109.850, 100.0, 35.585])
LAB_2 = np.array([[50.0, 10.0, -20.0], [70.0, -15.0, 25.0]])


def _stack(*fields: str) -> Callable[[Any], Any]:
    """The given fields of an appearance model's specification, stacked on a last axis."""
    return lambda spec: np.stack([getattr(spec, name) for name in fields], axis=-1)


# ---------------------------------------------------------------------------------------------------
# transfer functions: a camera log encoding and its decoding for each of a dozen vendors, the display and
# broadcast EOTFs and OETFs with their inverses, the generic curves and the dispatchers (the library has
# more than a hundred; these are representative without letting one family outweigh the others)

TRANSFER = (
    *(
        f"log_{way}_{name}"
        for name in (
            "ACEScc",
            "ACEScct",
            "ARRILogC3",
            "CanonLog3",
            "Cineon",
            "FLog2",
            "Log3G10",
            "NLog",
            "PivotedLog",
            "Protune",
            "SLog3",
            "VLog",
            "ViperLog",
            "DJIDLog",
        )
        for way in ("encoding", "decoding")
    ),
    "eotf_sRGB",
    "eotf_inverse_sRGB",
    "oetf_BT709",
    "oetf_inverse_BT709",
    "eotf_BT1886",
    "eotf_inverse_BT1886",
    "eotf_ST2084",
    "eotf_inverse_ST2084",
    "oetf_BT2100_HLG",
    "oetf_inverse_BT2100_HLG",
    "oetf_ARIBSTDB67",
    "oetf_inverse_ARIBSTDB67",
    "eotf_DICOMGSDF",
    "eotf_inverse_DICOMGSDF",
    "cctf_encoding_ProPhotoRGB",
    "cctf_decoding_ProPhotoRGB",
    "oetf_SMPTE240M",
    "eotf_SMPTE240M",
    "oetf_DaVinciIntermediate",
    "oetf_inverse_DaVinciIntermediate",
    "gamma_function",
    "exponent_function_monitor_curve",
    "logarithmic_function_camera",
    "full_to_legal",
    "legal_to_full",
    "log_encoding",
    "log_decoding",
    "oetf",
    "eotf",
    "cctf_encoding",
    "cctf_decoding",
    "ootf",
)
#: with a linear toe down to black: a zero input is a masked point
TRANSFER_ZERO = {
    "log_encoding_Cineon",
    "log_encoding_Protune",
    "log_encoding_NLog",
    "log_encoding_Log3G10",
    "log_encoding_REDLog",
    "log_encoding_REDLogFilm",
    "log_encoding",
}
#: undefined for a negative input (a logarithm of it): no negative masked point
TRANSFER_NO_NEGATIVE = TRANSFER_ZERO | {
    "eotf_DICOMGSDF",
    "eotf_inverse_DICOMGSDF",
    "log_encoding_FilmicPro6",
    "log_encoding_Log2",
    "log_encoding_PivotedLog",
    "log_encoding_ViperLog",
    "eotf_inverse_ST2084",
    "eotf_inverse_BT2100_PQ",
}
#: hybrid log-gamma switches at 0.5: a range whose points stay away from it
TRANSFER_RANGE = {
    "oetf_inverse_ARIBSTDB67": (0.05, 0.95),
    "eotf_BT2100_HLG": (0.05, 0.95),
    "oetf_inverse_BT2100_HLG": (0.05, 0.95),
}


def transfer_rows(names: tuple[str, ...]) -> list[Row]:
    rows = []
    for name in names:
        masked: tuple[float, ...] = (1.5,)
        if name in TRANSFER_ZERO:
            masked = (0.0, *masked)
        if name not in TRANSFER_NO_NEGATIVE:
            masked = (-0.01, *masked)
        lo, hi = TRANSFER_RANGE.get(name, (0.05, 0.9))
        rows.append(Row(f"models.rgb.transfer_functions.{name}", 0, lo, hi, masked=masked, label=name))
    return rows


# ---------------------------------------------------------------------------------------------------
# everything else


def rows(colour: Any) -> list[Row]:
    c = colour
    m = c.models
    cam02 = {"XYZ_w": D65, "L_A": 318.31, "Y_b": 20.0}

    def forward(name: str, **kwargs: Any) -> Callable[[np.ndarray], Any]:
        fn = getattr(m, name)
        return lambda x: fn(x, **kwargs)

    def model(name: str, lo: Any = XYZ[0], hi: Any = XYZ[1], **kwargs: Any) -> Row:
        return Row(f"models.{name}", 0, lo, hi, kwargs, shape=PAIR, label=name)

    def inverse(name: str, via: str, lo: Any = XYZ[0], hi: Any = XYZ[1], shape: tuple[int, ...] = PAIR) -> Row:
        return Row(f"models.{name}", 0, lo, hi, shape=shape, via=forward(via), label=name)

    def appearance(name: str, fields: tuple[str, ...], **kwargs: Any) -> Row:
        fn = getattr(c.appearance, name)
        pick = _stack(*fields)
        return Row(f"appearance.{name}", None, *XYZ100, shape=PAIR, call=lambda _, x: pick(fn(x, **kwargs)), label=name)

    def appearance_inverse(name: str, forward_name: str, spec: str, **kwargs: Any) -> Row:
        forward_fn = getattr(c.appearance, forward_name)
        inverse_fn = getattr(c.appearance, name)
        cls = getattr(c.appearance, spec)
        jch = _stack("J", "C", "h")

        def call(_: Any, x: np.ndarray) -> Any:
            return inverse_fn(cls(J=x[..., 0], C=x[..., 1], h=x[..., 2]), **kwargs)

        return Row(
            f"appearance.{name}",
            None,
            *XYZ100,
            shape=PAIR,
            call=call,
            via=lambda x: jch(forward_fn(x, **kwargs)),
            label=name,
        )

    scalar = {"shape": (3,)}
    models = [
        model("XYZ_to_xyY"),
        model("XYZ_to_xy"),
        model("XYZ_to_Lab"),
        model("XYZ_to_Luv"),
        model("XYZ_to_UCS"),
        model("XYZ_to_CIE1960UCS"),
        model("XYZ_to_CIE1976UCS"),
        model("XYZ_to_UVW"),
        model("XYZ_to_DIN99"),
        model("XYZ_to_hdr_CIELab"),
        model("XYZ_to_Hunter_Lab", *XYZ100),
        model("XYZ_to_Hunter_Rdab", *XYZ100),
        model("XYZ_to_K_ab_HunterLab1966", *XYZ100),
        model("XYZ_to_IPT"),
        model("XYZ_to_hdr_IPT"),
        model("XYZ_to_Jzazbz"),
        model("XYZ_to_Izazbz"),
        model("XYZ_to_OSA_UCS", *XYZ100),
        model("XYZ_to_ProLab"),
        model("XYZ_to_Oklab"),
        model("XYZ_to_IgPgTg"),
        model("XYZ_to_ICaCb"),
        model("XYZ_to_Yrg"),
        model("XYZ_to_sRGB"),
        model("XYZ_to_RGB", colourspace="Adobe RGB (1998)"),
        model("XYZ_to_ICtCp"),
        model("XYZ_to_IPT_Ragoo2021"),
        model("XYZ_to_sUCS"),
        model("XYZ_to_CAM02UCS"),
        model("XYZ_to_CAM02LCD"),
        model("XYZ_to_CAM02SCD"),
        inverse("xyY_to_XYZ", "XYZ_to_xyY"),
        inverse("xyY_to_xy", "XYZ_to_xyY"),
        Row("models.xy_to_XYZ", 0, *XY, shape=(2, 2), label="xy_to_XYZ"),
        Row("models.xy_to_xyY", 0, *XY, shape=(2, 2), label="xy_to_xyY"),
        Row("models.xy_to_Luv_uv", 0, *XY, shape=(2, 2), label="xy_to_Luv_uv"),
        Row("models.xy_to_UCS_uv", 0, *XY, shape=(2, 2), label="xy_to_UCS_uv"),
        inverse("Lab_to_XYZ", "XYZ_to_Lab"),
        inverse("Lab_to_LCHab", "XYZ_to_Lab"),
        Row("models.LCHab_to_Lab", 0, (20.0, 5.0, 15.0), (90.0, 60.0, 340.0), shape=PAIR, label="LCHab_to_Lab"),
        inverse("Luv_to_XYZ", "XYZ_to_Luv"),
        inverse("Luv_to_uv", "XYZ_to_Luv"),
        inverse("Luv_to_LCHuv", "XYZ_to_Luv"),
        Row("models.LCHuv_to_Luv", 0, (20.0, 5.0, 15.0), (90.0, 60.0, 340.0), shape=PAIR, label="LCHuv_to_Luv"),
        inverse("UCS_to_XYZ", "XYZ_to_UCS"),
        inverse("UCS_to_uv", "XYZ_to_UCS"),
        inverse("UVW_to_XYZ", "XYZ_to_UVW"),
        inverse("DIN99_to_XYZ", "XYZ_to_DIN99"),
        inverse("DIN99_to_Lab", "XYZ_to_DIN99"),
        inverse("Lab_to_DIN99", "XYZ_to_Lab"),
        inverse("hdr_CIELab_to_XYZ", "XYZ_to_hdr_CIELab"),
        inverse("Hunter_Lab_to_XYZ", "XYZ_to_Hunter_Lab", *XYZ100),
        inverse("Hunter_Rdab_to_XYZ", "XYZ_to_Hunter_Rdab", *XYZ100),
        inverse("IPT_to_XYZ", "XYZ_to_IPT"),
        inverse("IPT_hue_angle", "XYZ_to_IPT"),
        inverse("hdr_IPT_to_XYZ", "XYZ_to_hdr_IPT"),
        inverse("Jzazbz_to_XYZ", "XYZ_to_Jzazbz"),
        inverse("Izazbz_to_XYZ", "XYZ_to_Izazbz"),
        inverse("OSA_UCS_to_XYZ", "XYZ_to_OSA_UCS", *XYZ100),
        inverse("ProLab_to_XYZ", "XYZ_to_ProLab"),
        inverse("Oklab_to_XYZ", "XYZ_to_Oklab"),
        inverse("Oklab_to_Oklch", "XYZ_to_Oklab"),
        inverse("IgPgTg_to_XYZ", "XYZ_to_IgPgTg"),
        inverse("ICaCb_to_XYZ", "XYZ_to_ICaCb"),
        inverse("Yrg_to_XYZ", "XYZ_to_Yrg"),
        inverse("sUCS_to_XYZ", "XYZ_to_sUCS"),
        inverse("IPT_Ragoo2021_to_XYZ", "XYZ_to_IPT_Ragoo2021"),
        inverse("ICtCp_to_XYZ", "XYZ_to_ICtCp"),
        inverse("CAM02UCS_to_XYZ", "XYZ_to_CAM02UCS"),
        inverse("Jab_to_JCh", "XYZ_to_CAM02UCS"),
        Row("models.JCh_to_Jab", 0, (20.0, 5.0, 15.0), (90.0, 60.0, 340.0), shape=PAIR, label="JCh_to_Jab"),
        Row("models.sRGB_to_XYZ", 0, *RGB, shape=PAIR, label="sRGB_to_XYZ"),
        Row("models.RGB_to_XYZ", 0, *RGB, {"colourspace": "Adobe RGB (1998)"}, shape=PAIR, label="RGB_to_XYZ"),
        Row(
            "models.RGB_to_RGB",
            0,
            *RGB,
            {"input_colourspace": "sRGB", "output_colourspace": "ProPhoto RGB"},
            shape=PAIR,
            label="RGB_to_RGB",
        ),
        Row(
            "models.RGB_luminance",
            0,
            *RGB,
            {
                "primaries": np.array([[0.64, 0.33], [0.30, 0.60], [0.15, 0.06]]),
                "whitepoint": np.array([0.3127, 0.3290]),
            },
            shape=PAIR,
            label="RGB_luminance",
        ),
    ]
    rgb = [
        Row(f"models.{name}", 0, *RGB, shape=PAIR, label=name)
        for name in (
            "RGB_to_HSV",
            "RGB_to_HSL",
            "RGB_to_HCL",
            "RGB_to_CMY",
            "RGB_to_YCbCr",
            "RGB_to_YcCbcCrc",
            "RGB_to_YCoCg",
            "RGB_to_ICtCp",
            "RGB_to_Prismatic",
            "RGB_to_IHLS",
        )
    ]
    for name, via in (
        ("HSV_to_RGB", "RGB_to_HSV"),
        ("HSL_to_RGB", "RGB_to_HSL"),
        ("HCL_to_RGB", "RGB_to_HCL"),
        ("CMY_to_RGB", "RGB_to_CMY"),
        ("CMY_to_CMYK", "RGB_to_CMY"),
        ("YCbCr_to_RGB", "RGB_to_YCbCr"),
        ("YcCbcCrc_to_RGB", "RGB_to_YcCbcCrc"),
        ("YCoCg_to_RGB", "RGB_to_YCoCg"),
        ("ICtCp_to_RGB", "RGB_to_ICtCp"),
        ("Prismatic_to_RGB", "RGB_to_Prismatic"),
        ("IHLS_to_RGB", "RGB_to_IHLS"),
    ):
        rgb.append(Row(f"models.{name}", 0, *RGB, shape=PAIR, via=forward(via), label=name))
    rgb.append(
        Row(
            "models.CMYK_to_CMY",
            0,
            *RGB,
            shape=PAIR,
            via=lambda x: m.CMY_to_CMYK(m.RGB_to_CMY(x)),
            label="CMYK_to_CMY",
        )
    )

    colorimetry = [
        Row(f"colorimetry.{name}", 0, 10.0, 90.0, label=name)
        for name in (
            "lightness_Glasser1958",
            "lightness_Wyszecki1963",
            "lightness_Fairchild2010",
            "lightness_Fairchild2011",
            "lightness_Abebe2017",
            "intermediate_lightness_function_CIE1976",
        )
    ]
    colorimetry += [
        # CIE 1976 lightness is linear below Y = 0.8856: a masked point there
        Row("colorimetry.lightness_CIE1976", 0, 10.0, 90.0, masked=(0.5,), label="lightness_CIE1976"),
        Row("colorimetry.lightness", 0, 10.0, 90.0, masked=(0.5,), label="lightness"),
        Row("colorimetry.luminance_CIE1976", 0, 10.0, 90.0, masked=(5.0,), label="luminance_CIE1976"),
        Row("colorimetry.luminance", 0, 10.0, 90.0, masked=(5.0,), label="luminance"),
        Row(
            "colorimetry.intermediate_luminance_function_CIE1976",
            0,
            0.25,
            0.95,
            label="intermediate_luminance_function_CIE1976",
        ),
        Row("colorimetry.luminance_Newhall1943", 0, 1.0, 9.0, label="luminance_Newhall1943"),
        Row("colorimetry.luminance_ASTMD1535", 0, 1.0, 9.0, label="luminance_ASTMD1535"),
        Row("colorimetry.luminance_Fairchild2010", 0, 10.0, 90.0, label="luminance_Fairchild2010"),
        Row("colorimetry.luminance_Fairchild2011", 0, 10.0, 90.0, label="luminance_Fairchild2011"),
        Row("colorimetry.luminance_Abebe2017", 0, 10.0, 90.0, label="luminance_Abebe2017"),
        Row("colorimetry.whiteness_Berger1959", 0, *XYZ100, {"XYZ_0": D65}, shape=PAIR, label="whiteness_Berger1959"),
        Row("colorimetry.whiteness_Taube1960", 0, *XYZ100, {"XYZ_0": D65}, shape=PAIR, label="whiteness_Taube1960"),
        Row(
            "colorimetry.whiteness_Stensby1968",
            0,
            *XYZ,
            shape=PAIR,
            via=lambda x: m.XYZ_to_Lab(x),
            label="whiteness_Stensby1968",
        ),
        Row("colorimetry.whiteness_ASTME313", 0, *XYZ100, shape=PAIR, label="whiteness_ASTME313"),
        Row("colorimetry.whiteness_Ganz1979", 0, *XY, {"Y": 95.0}, shape=(2, 2), label="whiteness_Ganz1979"),
        Row(
            "colorimetry.whiteness_CIE2004",
            0,
            *XY,
            {"Y": 95.0, "xy_n": np.array([0.3139, 0.3311])},
            shape=(2, 2),
            label="whiteness_CIE2004",
        ),
        Row("colorimetry.yellowness_ASTMD1925", 0, *XYZ100, shape=PAIR, label="yellowness_ASTMD1925"),
        Row("colorimetry.yellowness_ASTME313", 0, *XYZ100, shape=PAIR, label="yellowness_ASTME313"),
        Row(
            "colorimetry.yellowness_ASTME313_alternative",
            0,
            *XYZ100,
            shape=PAIR,
            label="yellowness_ASTME313_alternative",
        ),
        Row("colorimetry.planck_law", "temperature", 3000.0, 9000.0, {"wavelength": 555e-9}, label="planck_law"),
        Row(
            "colorimetry.rayleigh_jeans_law",
            "temperature",
            3000.0,
            9000.0,
            {"wavelength": 555e-9},
            label="rayleigh_jeans_law",
        ),
        Row("colorimetry.daylight_locus_function", 0, 0.25, 0.35, label="daylight_locus_function"),
    ]

    def delta(name: str, lo: Any, hi: Any, other: Any) -> Row:
        return Row(f"difference.{name}", 0, lo, hi, args=(other,), shape=PAIR, via=None, label=name)

    lab = {"via": lambda x: m.XYZ_to_Lab(x)}
    difference = [
        Row(f"difference.{name}", 0, *XYZ, args=(LAB_2,), shape=PAIR, label=name, **lab)
        for name in (
            "delta_E_CIE1976",
            "delta_E_CIE1994",
            "delta_E_CIE2000",
            "delta_E_CMC",
            "delta_E_DIN99",
            "delta_E_HyAB",
            "delta_E_HyCH",
        )
    ]
    jab_2 = m.XYZ_to_CAM02UCS(np.array([[0.3, 0.3, 0.3], [0.2, 0.25, 0.4]]))
    difference += [
        Row(f"difference.{name}", 0, *XYZ, args=(jab_2,), shape=PAIR, via=forward("XYZ_to_CAM02UCS"), label=name)
        for name in ("delta_E_CAM02UCS", "delta_E_CAM02LCD", "delta_E_CAM02SCD", "delta_E_CAM16UCS")
    ]
    ictcp_2 = m.XYZ_to_ICtCp(np.array([[0.3, 0.3, 0.3], [0.2, 0.25, 0.4]]))
    difference += [
        Row(
            "difference.delta_E_ITP",
            0,
            *XYZ,
            args=(ictcp_2,),
            shape=PAIR,
            via=forward("XYZ_to_ICtCp"),
            label="delta_E_ITP",
        ),
        Row("difference.delta_E", 0, *XYZ, args=(LAB_2,), shape=PAIR, label="delta_E", **lab),
        Row("difference.power_function_Huang2015", 0, 1.0, 10.0, label="power_function_Huang2015"),
        Row(
            "difference.index_stress_Garcia2007",
            "d_E",
            1.0,
            10.0,
            {"d_V": np.array([1.5, 2.5, 4.0, 8.5])},
            shape=(4,),
            label="index_stress_Garcia2007",
        ),
    ]

    cct = (4000.0, 20000.0)
    temperature = [
        Row(
            "temperature.xy_to_CCT_McCamy1992",
            0,
            (0.30, 0.31),
            (0.34, 0.36),
            shape=(2, 2),
            label="xy_to_CCT_McCamy1992",
        ),
        Row(
            "temperature.xy_to_CCT_Hernandez1999",
            0,
            (0.30, 0.31),
            (0.34, 0.36),
            shape=(2, 2),
            label="xy_to_CCT_Hernandez1999",
        ),
        Row("temperature.CCT_to_xy_Kang2002", 0, *cct, masked=((5000.0, 2500.0, 9000.0),), label="CCT_to_xy_Kang2002"),
        Row("temperature.CCT_to_xy_CIE_D", 0, *cct, masked=((5000.0, 6500.0, 9000.0),), label="CCT_to_xy_CIE_D"),
        Row("temperature.CCT_to_mired", 0, *cct, label="CCT_to_mired"),
        Row("temperature.mired_to_CCT", 0, 50.0, 250.0, label="mired_to_CCT"),
        Row(
            "temperature.CCT_to_uv_Krystek1985",
            None,
            2000.0,
            12000.0,
            call=lambda fn, x: fn(np.stack([x, np.zeros_like(x)], axis=-1)),
            label="CCT_to_uv_Krystek1985",
        ),
        Row(
            "temperature.CCT_to_uv_Robertson1968",
            None,
            *cct,
            call=lambda fn, x: fn(np.stack([x, np.full_like(x, 0.002)], axis=-1)),
            label="CCT_to_uv_Robertson1968",
        ),
        Row("temperature.xy_to_CCT_Kang2002", 0, (0.30, 0.31), (0.34, 0.36), shape=(2, 2), label="xy_to_CCT_Kang2002"),
    ]

    adaptation = [
        Row(
            "adaptation.chromatic_adaptation_VonKries",
            0,
            *XYZ,
            {"XYZ_w": D65 / 100, "XYZ_wr": ILLUMINANT_A / 100},
            shape=PAIR,
            label="chromatic_adaptation_VonKries",
        ),
        Row(
            "adaptation.matrix_chromatic_adaptation_VonKries",
            0,
            (0.90, 0.95, 1.00),
            (1.00, 1.05, 1.10),
            {"XYZ_wr": ILLUMINANT_A / 100},
            **scalar,
            label="matrix_chromatic_adaptation_VonKries",
        ),
        Row(
            "adaptation.chromatic_adaptation_Fairchild1990",
            0,
            *XYZ100,
            {"XYZ_n": D65, "XYZ_r": ILLUMINANT_A, "Y_n": 200.0},
            shape=PAIR,
            label="chromatic_adaptation_Fairchild1990",
        ),
        Row(
            "adaptation.chromatic_adaptation_CIE1994",
            0,
            *XYZ100,
            {
                "xy_o1": np.array([0.4476, 0.4074]),
                "xy_o2": np.array([0.3127, 0.3290]),
                "Y_o": 20.0,
                "E_o1": 1000.0,
                "E_o2": 1000.0,
            },
            shape=PAIR,
            label="chromatic_adaptation_CIE1994",
        ),
        Row(
            "adaptation.chromatic_adaptation_CMCCAT2000",
            0,
            *XYZ100,
            {"XYZ_w": D65, "XYZ_wr": ILLUMINANT_A, "L_A1": 200.0, "L_A2": 200.0},
            shape=PAIR,
            label="chromatic_adaptation_CMCCAT2000",
        ),
        Row(
            "adaptation.chromatic_adaptation_Zhai2018",
            0,
            *XYZ100,
            {"XYZ_wb": D65, "XYZ_wd": ILLUMINANT_A},
            shape=PAIR,
            label="chromatic_adaptation_Zhai2018",
        ),
        Row(
            "adaptation.chromatic_adaptation_vK20",
            0,
            *XYZ,
            {"XYZ_p": D65 / 100, "XYZ_n": ILLUMINANT_A / 100},
            shape=PAIR,
            label="chromatic_adaptation_vK20",
        ),
        Row(
            "adaptation.chromatic_adaptation_Li2025",
            0,
            *XYZ100,
            {"XYZ_ws": D65, "XYZ_wd": ILLUMINANT_A, "L_A": 100.0, "F_surround": 1.0},
            shape=PAIR,
            label="chromatic_adaptation_Li2025",
        ),
        Row(
            "adaptation.chromatic_adaptation",
            0,
            *XYZ,
            {"XYZ_w": D65 / 100, "XYZ_wr": ILLUMINANT_A / 100},
            shape=PAIR,
            label="chromatic_adaptation",
        ),
    ]

    appearance_rows = [
        appearance("XYZ_to_CIECAM02", ("J", "C", "h"), **cam02),
        appearance("XYZ_to_CAM16", ("J", "C", "h"), **cam02),
        appearance("XYZ_to_CIECAM16", ("J", "C", "h"), **cam02),
        appearance("XYZ_to_Hellwig2022", ("J", "C", "h"), **cam02),
        appearance("XYZ_to_Kim2009", ("J", "C", "h"), XYZ_w=D65, L_A=318.31),
        appearance("XYZ_to_ZCAM", ("J", "C", "h"), XYZ_w=D65, L_A=264.0, Y_b=100.0),
        appearance("XYZ_to_Hunt", ("J", "C", "h"), XYZ_w=D65, XYZ_b=D65 * 0.2, L_A=318.31, CCT_w=6504.0),
        appearance("XYZ_to_LLAB", ("J", "C", "h"), XYZ_0=D65, Y_b=20.0, L=318.31),
        appearance("XYZ_to_Nayatani95", ("L_star_P", "C", "h"), XYZ_n=D65, Y_o=20.0, E_o=5000.0, E_or=1000.0),
        appearance("XYZ_to_RLAB", ("J", "C", "h"), XYZ_n=D65, Y_n=31.83),
        appearance("XYZ_to_ATD95", ("h", "C", "Q"), XYZ_0=D65, Y_0=318.31, k_1=0.0, k_2=50.0),
        appearance("XYZ_to_sCAM", ("J", "C", "h"), **cam02),
        appearance_inverse("CIECAM02_to_XYZ", "XYZ_to_CIECAM02", "CAM_Specification_CIECAM02", **cam02),
        appearance_inverse("CAM16_to_XYZ", "XYZ_to_CAM16", "CAM_Specification_CAM16", **cam02),
        appearance_inverse("Hellwig2022_to_XYZ", "XYZ_to_Hellwig2022", "CAM_Specification_Hellwig2022", **cam02),
        Row("appearance.coefficient_q_Nayatani1997", 0, 0.2, 6.0, label="coefficient_q_Nayatani1997"),
        Row("appearance.coefficient_K_Br_Nayatani1997", 0, 10.0, 200.0, label="coefficient_K_Br_Nayatani1997"),
    ]

    r = "phenomena.rayleigh"
    micrometres = (0.4, 0.7)
    phenomena = [
        Row(f"{r}.air_refraction_index_Penndorf1957", 0, *micrometres, label="air_refraction_index_Penndorf1957"),
        Row(f"{r}.air_refraction_index_Edlen1966", 0, *micrometres, label="air_refraction_index_Edlen1966"),
        Row(f"{r}.air_refraction_index_Peck1972", 0, *micrometres, label="air_refraction_index_Peck1972"),
        Row(f"{r}.air_refraction_index_Bodhaine1999", 0, *micrometres, label="air_refraction_index_Bodhaine1999"),
        Row(f"{r}.N2_depolarisation", 0, *micrometres, label="N2_depolarisation"),
        Row(f"{r}.O2_depolarisation", 0, *micrometres, label="O2_depolarisation"),
        Row(f"{r}.F_air_Bates1984", 0, *micrometres, label="F_air_Bates1984"),
        Row(f"{r}.F_air_Bodhaine1999", 0, *micrometres, label="F_air_Bodhaine1999"),
        Row(f"{r}.molecular_density", "temperature", 250.0, 310.0, label="molecular_density"),
        Row(f"{r}.mean_molecular_weights", 0, 280.0, 420.0, label="mean_molecular_weights"),
        Row(f"{r}.gravity_List1968", "latitude", 5.0, 70.0, {"altitude": 1500.0}, label="gravity_List1968"),
        # wavelengths in cm (about 5e-5): the reference steps on that scale
        Row(f"{r}.scattering_cross_section", 0, 4e-5, 7e-5, scale=1e-5, label="scattering_cross_section"),
        Row(f"{r}.rayleigh_optical_depth", 0, 4e-5, 7e-5, scale=1e-5, label="rayleigh_optical_depth"),
        Row(
            "phenomena.light_water_molar_refraction_Schiebener1990",
            0,
            400.0,
            700.0,
            label="light_water_molar_refraction_Schiebener1990",
        ),
        Row(
            "phenomena.light_water_refractive_index_Schiebener1990",
            0,
            400.0,
            700.0,
            label="light_water_refractive_index_Schiebener1990",
        ),
    ]

    biochemistry = [
        Row(
            "biochemistry.reaction_rate_MichaelisMenten_Michaelis1913",
            0,
            0.5,
            5.0,
            args=(2.5, 0.8),
            label="reaction_rate_MichaelisMenten_Michaelis1913",
        ),
        Row(
            "biochemistry.substrate_concentration_MichaelisMenten_Michaelis1913",
            0,
            0.2,
            2.0,
            args=(2.5, 0.8),
            label="substrate_concentration_MichaelisMenten_Michaelis1913",
        ),
        Row(
            "biochemistry.reaction_rate_MichaelisMenten_Abebe2017",
            0,
            0.5,
            5.0,
            args=(2.5, 0.8, 0.9),
            label="reaction_rate_MichaelisMenten_Abebe2017",
        ),
        Row(
            "biochemistry.substrate_concentration_MichaelisMenten_Abebe2017",
            0,
            0.2,
            2.0,
            args=(2.5, 0.8, 0.9),
            label="substrate_concentration_MichaelisMenten_Abebe2017",
        ),
    ]

    notation = [
        # ASTM D1535 inverts its polynomial through a table (piecewise linear in Y): the reference's step
        # stays within one segment of it
        Row(
            f"notation.{name}",
            0,
            10.0,
            90.0,
            label=name,
            scale=1e-2 if "ASTM" in name or name == "munsell_value" else None,
        )
        for name in (
            "munsell_value_Priest1920",
            "munsell_value_Munsell1933",
            "munsell_value_Moon1943",
            "munsell_value_Saunderson1944",
            "munsell_value_Ladd1955",
            "munsell_value_McCamy1987",
            "munsell_value_ASTMD1535",
            "munsell_value",
        )
    ]

    a = "algebra"
    algebra = [
        Row(f"{a}.spow", 0, -0.5, 0.8, args=(3.0,), masked=(0.0,), label="spow"),
        Row(f"{a}.sdiv", 0, 0.1, 2.0, args=(np.array([0.5, 2.0, 4.0]),), label="sdiv"),
        Row(f"{a}.normalise_maximum", 0, 0.1, 0.9, shape=(4,), label="normalise_maximum"),
        Row(f"{a}.normalise_vector", 0, *RGB, shape=PAIR, label="normalise_vector"),
        Row(
            f"{a}.vecmul",
            "v",
            *RGB,
            {"m": np.array([[0.5, 0.3, 0.2], [0.1, 0.8, 0.1], [0.0, 0.2, 0.9]])},
            shape=PAIR,
            label="vecmul",
        ),
        Row(f"{a}.euclidean_distance", 0, *XYZ, args=(np.full((2, 3), 0.3),), shape=PAIR, label="euclidean_distance"),
        Row(f"{a}.manhattan_distance", 0, *XYZ, args=(np.full((2, 3), 0.05),), shape=PAIR, label="manhattan_distance"),
        Row(f"{a}.lerp", 0, 0.1, 0.9, {"a": 2.0, "b": 5.0}, label="lerp"),
        Row(f"{a}.linstep_function", 0, 0.1, 0.9, {"a": 2.0, "b": 5.0}, label="linstep_function"),
        Row(f"{a}.smoothstep_function", 0, 0.1, 0.9, masked=(1.2,), label="smoothstep_function"),
        Row(f"{a}.smooth", 0, 0.1, 0.9, label="smooth"),
        Row(
            f"{a}.linear_conversion",
            0,
            0.1,
            0.9,
            args=(np.array([0.0, 1.0]), np.array([10.0, 20.0])),
            label="linear_conversion",
        ),
        Row(f"{a}.cartesian_to_spherical", 0, *XYZ, shape=PAIR, label="cartesian_to_spherical"),
        Row(
            f"{a}.spherical_to_cartesian",
            0,
            (0.5, 0.3, -2.0),
            (2.0, 2.5, 2.8),
            shape=PAIR,
            label="spherical_to_cartesian",
        ),
        Row(f"{a}.cartesian_to_polar", 0, (0.2, 0.1), (1.0, 0.9), shape=(2, 2), label="cartesian_to_polar"),
        Row(f"{a}.polar_to_cartesian", 0, (0.5, -2.0), (2.0, 2.8), shape=(2, 2), label="polar_to_cartesian"),
        Row(f"{a}.cartesian_to_cylindrical", 0, *XYZ, shape=PAIR, label="cartesian_to_cylindrical"),
        Row(
            f"{a}.cylindrical_to_cartesian",
            0,
            (0.5, -2.0, 0.1),
            (2.0, 2.8, 0.9),
            shape=PAIR,
            label="cylindrical_to_cartesian",
        ),
        Row(f"{a}.kernel_lanczos", 0, 0.1, 2.6, label="kernel_lanczos"),
        Row(f"{a}.kernel_sinc", 0, 0.1, 2.6, label="kernel_sinc"),
        Row(f"{a}.kernel_linear", 0, 0.1, 0.9, label="kernel_linear"),
        Row(f"{a}.kernel_cardinal_spline", 0, 0.1, 1.9, label="kernel_cardinal_spline"),
        Row(
            f"{a}.table_interpolation_trilinear",
            0,
            (0.12, 0.30, 0.08),
            (0.85, 0.70, 0.60),
            args=(_lut(),),
            shape=PAIR,
            label="table_interpolation_trilinear",
        ),
        Row(
            f"{a}.table_interpolation_tetrahedral",
            0,
            (0.12, 0.30, 0.08),
            (0.85, 0.70, 0.60),
            args=(_lut(),),
            shape=PAIR,
            label="table_interpolation_tetrahedral",
        ),
    ]

    contrast = [
        Row(
            "contrast.contrast_sensitivity_function_Barten1999",
            0,
            1.0,
            20.0,
            label="contrast_sensitivity_function_Barten1999",
        ),
        Row("contrast.maximum_angular_size_Barten1999", 0, 1.0, 20.0, label="maximum_angular_size_Barten1999"),
        Row("contrast.optical_MTF_Barten1999", 0, 1.0, 20.0, label="optical_MTF_Barten1999"),
        Row("contrast.pupil_diameter_Barten1999", 0, 1.0, 100.0, label="pupil_diameter_Barten1999"),
        Row("contrast.retinal_illuminance_Barten1999", 0, 1.0, 100.0, label="retinal_illuminance_Barten1999"),
        Row("contrast.sigma_Barten1999", "d", 2.0, 6.0, label="sigma_Barten1999"),
    ]

    characterisation = [
        Row(
            "characterisation.polynomial_expansion_Finlayson2015",
            0,
            *RGB,
            {"degree": 2, "root_polynomial_expansion": True},
            shape=PAIR,
            label="polynomial_expansion_Finlayson2015",
        ),
        Row(
            "characterisation.polynomial_expansion_Vandermonde",
            0,
            *RGB,
            {"degree": 2},
            shape=PAIR,
            label="polynomial_expansion_Vandermonde",
        ),
        Row(
            "characterisation.matrix_augmented_Cheung2004",
            0,
            *RGB,
            {"terms": 7},
            shape=PAIR,
            label="matrix_augmented_Cheung2004",
        ),
    ]

    geometry = [
        Row(
            "geometry.point_at_angle_on_ellipse",
            0,
            10.0,
            170.0,
            args=(np.array([0.5, 0.5, 2.0, 1.0, 10.0]),),
            label="point_at_angle_on_ellipse",
        ),
        Row(
            "geometry.ellipse_coefficients_general_form",
            0,
            (0.4, 0.4, 1.5, 0.8, 5.0),
            (0.6, 0.6, 2.5, 1.2, 35.0),
            shape=(5,),
            label="ellipse_coefficients_general_form",
        ),
        Row(
            "geometry.extend_line_segment",
            0,
            (0.1, 0.2),
            (0.4, 0.9),
            args=(np.array([1.0, 1.5]),),
            shape=(2,),
            label="extend_line_segment",
        ),
    ]

    return [
        *models,
        *rgb,
        *colorimetry,
        *difference,
        *temperature,
        *adaptation,
        *appearance_rows,
        *phenomena,
        *biochemistry,
        *notation,
        *algebra,
        *contrast,
        *characterisation,
        *geometry,
        *transfer_rows(TRANSFER),
    ]


def _lut() -> np.ndarray:
    """A 3D table (5 x 5 x 5 x 3): a smooth colour transform sampled on a grid."""
    grid = np.linspace(0.0, 1.0, 5)
    r, g, b = np.meshgrid(grid, grid, grid, indexing="ij")
    return np.stack([r**1.2 + 0.1 * g, g**0.9 + 0.05 * b * r, b**1.1 + 0.1 * r * g], axis=-1)


def cases() -> list[Case]:
    options = np.get_printoptions()
    import colour  # it sets NumPy's print options to legacy="1.13" for every module of the process

    np.set_printoptions(**options)
    return build(LIBRARY, colour, rows(colour))
