"""Looks of Tetris screens for the synthetic renderer, as data.

A skin says how a game draws its screen: the frame background, the well (fill, grid lines,
border), how one cell is drawn, the colour of each piece and where the well and the
next-piece preview sit in the frame.  The set is deliberately varied (text-mode, monochrome,
bevelled, flat, outlined, glossy, textured and picture backgrounds, dark-on-light) because the
recognizer must work on games this project has never seen.  Skins marked ``held_out`` must
never be used to tune recognition; benchmarks report them separately.

Colours are ``"#rrggbb"`` strings.  Colour ids: 0 empty, 1..7 Fahey's piece order O I S Z L J
T, 8 a settled cell whose piece is unknown (garbage, or a board given without colours).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Final, Literal

CellStyle = Literal["flat", "bevel", "outline", "brackets", "glossy"]
BackgroundKind = Literal["solid", "vgradient", "checker", "picture"]

#: Colour id of a settled cell whose piece type is unknown.
UNKNOWN_PIECE_ID: Final[int] = 8


@dataclass(frozen=True)
class Background:
    """The frame outside the well: one colour, a vertical gradient, a checker texture or a
    picture-like random image (colours are the palette it is drawn from)."""

    kind: BackgroundKind
    colours: tuple[str, ...]


@dataclass(frozen=True)
class Preview:
    """The next-piece box: its top-left corner in cells from the well's top-left corner
    (negative x is left of the well) and its size in cells."""

    at_cells: tuple[float, float]
    size_cells: tuple[int, int] = (5, 4)
    border: str | None = None


@dataclass(frozen=True)
class Skin:
    """How one game draws its screen (see the module docstring)."""

    name: str
    background: Background
    #: Colour of empty cells; None lets the frame background show through the well.
    well_fill: str | None
    cell_style: CellStyle
    #: Colours of ids 1..8 (O I S Z L J T, unknown); single-colour games repeat one colour.
    piece_colours: tuple[str, str, str, str, str, str, str, str]
    #: Fraction of the frame height covered by the well, and the well's centre as fractions of
    #: the frame width and height.
    well_height: float = 0.85
    well_centre: tuple[float, float] = (0.5, 0.5)
    grid: str | None = None
    border: str | None = None
    #: Border thickness in cells (drawn outside the cell area).
    border_cells: float = 0.4
    #: Pixels of well background left around each filled cell.
    cell_gap: int = 0
    #: A mark drawn in every empty cell (the 1986 original prints " ." in empty cells).
    empty_mark: str | None = None
    preview: Preview | None = None
    #: Whether the game outlines where the falling piece would land (a ghost piece).
    ghost: bool = False
    text: str = "#ffffff"
    held_out: bool = False


GUIDELINE = ("#f0d000", "#00c8e8", "#30c030", "#e02020", "#f08000", "#2040e0", "#a030c0", "#808080")
NES = ("#f8f8f8", "#3cbcfc", "#0058f8", "#b8f818", "#0058f8", "#b8f818", "#f8f8f8", "#a0a0a0")


def _one_colour(colour: str) -> tuple[str, str, str, str, str, str, str, str]:
    return (colour,) * 8


SKINS: Final[tuple[Skin, ...]] = (
    Skin(  # Pajitnov's 1986 Elektronika 60: green text, "[]" blocks, " ." for empty, "<! !>" walls
        name="elektronika1986",
        background=Background("solid", ("#000000",)),
        well_fill="#000000",
        cell_style="brackets",
        piece_colours=_one_colour("#40e060"),
        well_height=0.8,
        well_centre=(0.45, 0.48),
        border="#40e060",
        border_cells=0.5,
        empty_mark="#208030",
        preview=Preview(at_cells=(-7.0, 1.0), size_cells=(5, 3)),
        text="#40e060",
    ),
    Skin(  # monochrome phosphor terminal: one colour, dim grid
        name="green_screen",
        background=Background("solid", ("#041404",)),
        well_fill="#062006",
        cell_style="flat",
        piece_colours=_one_colour("#50ff50"),
        grid="#0c400c",
        border="#30c030",
        border_cells=0.25,
        cell_gap=1,
        text="#50ff50",
    ),
    Skin(  # NES-like: bevelled cells with a shine, black well, patterned surroundings
        name="nes",
        background=Background("checker", ("#606060", "#505050")),
        well_fill="#000000",
        cell_style="bevel",
        piece_colours=NES,
        well_height=0.8,
        well_centre=(0.5, 0.52),
        border="#b0b0b0",
        border_cells=0.35,
        cell_gap=1,
        preview=Preview(at_cells=(11.5, 8.0), size_cells=(5, 4), border="#b0b0b0"),
    ),
    Skin(  # flat modern: guideline colours, grid lines, gradient surroundings, a ghost piece
        name="flat_modern",
        background=Background("vgradient", ("#1a1a40", "#402060")),
        well_fill="#101018",
        cell_style="flat",
        piece_colours=GUIDELINE,
        well_height=0.9,
        well_centre=(0.42, 0.5),
        grid="#303040",
        border="#8080a0",
        border_cells=0.2,
        preview=Preview(at_cells=(11.0, 0.0), size_cells=(5, 4), border="#8080a0"),
        ghost=True,
    ),
    Skin(  # outlined cells without fill, no grid
        name="outline",
        background=Background("solid", ("#202020",)),
        well_fill="#000000",
        cell_style="outline",
        piece_colours=GUIDELINE,
        well_height=0.85,
        well_centre=(0.55, 0.5),
        border="#c0c0c0",
        border_cells=0.15,
        cell_gap=1,
        preview=Preview(at_cells=(-6.5, 2.0), size_cells=(5, 4), border="#c0c0c0"),
    ),
    Skin(  # no grid, no border, the gradient background shows through the well
        name="gradient_open",
        background=Background("vgradient", ("#203858", "#70a0c0")),
        well_fill=None,
        cell_style="glossy",
        piece_colours=GUIDELINE,
        well_height=0.75,
        well_centre=(0.5, 0.45),
        cell_gap=1,
    ),
    Skin(  # busy picture-like background around a dark well
        name="picture",
        background=Background("picture", ("#c08040", "#4080c0", "#40a060", "#e0d0a0", "#603020")),
        well_fill="#181818",
        cell_style="glossy",
        piece_colours=GUIDELINE,
        well_height=0.8,
        well_centre=(0.38, 0.5),
        border="#e0e0e0",
        border_cells=0.3,
        preview=Preview(at_cells=(11.0, 2.0), size_cells=(5, 4), border="#e0e0e0"),
    ),
    Skin(  # dark cells on a light background, like a printed page or an e-ink game
        name="paper",
        background=Background("solid", ("#e8e4d8",)),
        well_fill="#f4f2ea",
        cell_style="flat",
        piece_colours=_one_colour("#282828"),
        well_height=0.85,
        well_centre=(0.5, 0.5),
        grid="#d8d4c8",
        cell_gap=1,
        preview=Preview(at_cells=(11.0, 0.5), size_cells=(5, 4), border="#282828"),
        text="#282828",
    ),
    Skin(  # four-shade handheld: olive palette, bevels, light background
        name="handheld",
        background=Background("solid", ("#9bbc0f",)),
        well_fill="#9bbc0f",
        cell_style="bevel",
        piece_colours=("#306230", "#0f380f", "#306230", "#0f380f", "#306230", "#0f380f", "#306230", "#0f380f"),
        well_height=0.9,
        well_centre=(0.35, 0.5),
        border="#0f380f",
        border_cells=0.5,
        preview=Preview(at_cells=(11.5, 1.0), size_cells=(5, 4), border="#0f380f"),
        text="#0f380f",
        held_out=True,
    ),
    Skin(  # neon: outlined-and-glossy cells on a checker texture, no border, no preview
        name="neon",
        background=Background("checker", ("#100020", "#180830")),
        well_fill=None,
        cell_style="glossy",
        piece_colours=("#ffff40", "#40ffff", "#40ff40", "#ff4040", "#ff9020", "#4060ff", "#ff40ff", "#c0c0c0"),
        well_height=0.7,
        well_centre=(0.62, 0.55),
        grid="#281840",
        held_out=True,
    ),
    Skin(  # pastel web game: light well, thin grid, bevelled pastel cells, picture surroundings
        name="pastel",
        background=Background("picture", ("#f0c8d8", "#c8e0f0", "#f8f0c0", "#d0f0d0")),
        well_fill="#fafafa",
        cell_style="bevel",
        piece_colours=("#f0d860", "#80d0e8", "#90d890", "#f09090", "#f0b070", "#8090e0", "#c090d8", "#b0b0b0"),
        well_height=0.8,
        well_centre=(0.5, 0.5),
        grid="#e4e4e4",
        border="#9090a0",
        border_cells=0.2,
        preview=Preview(at_cells=(-6.5, 0.0), size_cells=(5, 4), border="#9090a0"),
        text="#404050",
        held_out=True,
    ),
)

_BY_NAME: Final[dict[str, Skin]] = {s.name: s for s in SKINS}


def skin(name: str) -> Skin:
    """The skin called ``name``; a clear error lists the known ones."""
    try:
        return _BY_NAME[name]
    except KeyError:
        raise ValueError(f"unknown skin {name!r}; known skins: {', '.join(_BY_NAME)}") from None


def tuning_skins() -> tuple[Skin, ...]:
    """Skins recognition may be tuned on."""
    return tuple(s for s in SKINS if not s.held_out)


def held_out_skins() -> tuple[Skin, ...]:
    """Skins kept out of any tuning; benchmarks report them separately."""
    return tuple(s for s in SKINS if s.held_out)
