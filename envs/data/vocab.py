"""The closed vocabulary of the synthetic shapes world.

Kept free of heavy imports: the sandboxed tool backend imports the palette from here
(a detector's label set, not the scene graph), and it runs inside every worker.
"""

# Flat RGB colours, chosen far apart (pairwise RGB distance > 80) so a nearest-colour
# classifier on the rendered pixels is reliable when objects do not overlap.
COLORS: dict[str, tuple[int, int, int]] = {
    "red": (215, 35, 35),
    "orange": (250, 140, 20),
    "yellow": (240, 220, 40),
    "green": (40, 160, 60),
    "cyan": (40, 205, 215),
    "blue": (40, 70, 215),
    "purple": (140, 50, 190),
    "gray": (120, 120, 120),
}
SHAPES: tuple[str, ...] = ("circle", "square", "triangle")
SIZES: tuple[str, ...] = ("small", "large")
ATTRIBUTES: dict[str, tuple[str, ...]] = {
    "color": tuple(COLORS),
    "shape": SHAPES,
    "size": SIZES,
}
BACKGROUND: tuple[int, int, int] = (245, 245, 240)

# Half of an object's bounding-box side, in pixels on a 256-pixel canvas.  Large is
# nearly twice small, so size stays separable from pixels alone.
HALF_EXTENT: dict[str, int] = {"small": 12, "large": 22}
REFERENCE_CANVAS = 256

RELATIONS: tuple[str, ...] = ("left", "right", "above", "below")
RELATION_PHRASE: dict[str, str] = {
    "left": "to the left of",
    "right": "to the right of",
    "above": "above",
    "below": "below",
}
NUMBER_WORDS = ("zero", "one", "two", "three", "four", "five", "six", "seven", "eight",
                "nine", "ten")


def half_extent(size: str, canvas: int = REFERENCE_CANVAS) -> int:
    return max(2, round(HALF_EXTENT[size] * canvas / REFERENCE_CANVAS))


def plural(shape_or_noun: str) -> str:
    return shape_or_noun + "s"
