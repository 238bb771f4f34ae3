"""shapes-cv: classical perception of flat-colour shape scenes, from the pixels alone.

Per image (cached by content): the background colour from the border; the image's own
palette, the peaks of its colour histogram, so any flat background and any object colour
work, not only our renderer's (colours closer than the border's noise are one); and what
the image calls for: a flat one keeps every object however small, eroding less when its
objects are small, while a noisy one (uneven lighting, specks: our renderer's clutter)
gets the erosion and size limits of our 24-px objects at 256 px, scaled to the image.
Per (image, crop): each pixel labelled with its nearest palette colour; an erosion that
keeps a pixel only when its 4 neighbours carry its label, which removes thin clutter
strokes, anti-aliased rims and touching neighbours of other colours; connected
components, each grown back to its full extent within its colour; then the colour named
by its nearest basic colour term (colors.py), the shape from corner occupancy, fill and
aspect (circle, square, rectangle, triangle), and the size from extent.  It never sees a
scene graph.
"""
from __future__ import annotations

from collections import namedtuple

import numpy as np
from scipy import ndimage

from envs.common.lru import LRU
from envs.data.vocab import HALF_EXTENT, REFERENCE_CANVAS
from envs.tools import answers
from envs.tools.backend import Backend, View
from envs.tools.colors import color_name

Component = namedtuple("Component", "left lower right upper area color shape size")
# What the whole image tells every crop of it: its colours and the label of each colour
# bin, how far to erode, and how small an object's eroded core may be (area, side).
Scene = namedtuple("Scene", "palette lut erode min_core min_side")

_SCENES = LRU(max_items=256)  # each holds a 32 KB colour table
_SEGMENTS = LRU(max_items=2048)
_BACKGROUNDS = LRU(max_items=2048)

# Thresholds in pixels of a 256-pixel canvas with our object sizes, scaled with the image.
MIN_FILL = 0.3  # the least share of its box an object fills (a diagonal stroke fills less)
MIN_CORE, MIN_SIDE = 30, 4  # px: an object's core in clutter (area, narrowest side)
ERODE = 2  # px: removes clutter strokes up to 3 px wide, keeps 24-px shapes whole
SIZE_SPLIT = HALF_EXTENT["small"] + HALF_EXTENT["large"]  # between the two diameters
SQUARE_FILL, CIRCLE_FILL, TRIANGLE_SYMMETRY = 0.9, 0.64, 0.55
RECTANGLE_ASPECT = 1.3  # sides further apart than this make a rectangle, not a square
PEAK_SEPARATION = 10.0  # RGB distance below which two histogram peaks are one colour
MAX_COLORS = 24
CORE_SIDE = 16  # px: an eroded core at least this wide is classified instead of the grown mask


def _border(image: np.ndarray) -> np.ndarray:
    return np.concatenate([image[0], image[-1], image[:, 0], image[:, -1]]).astype(np.float32)


def background(view: View) -> tuple:
    """The background colour: the median of the full image's border."""
    return _BACKGROUNDS.remember(view.digest,
                                 lambda: tuple(int(v) for v in np.median(_border(view.root), 0)))


def noise(image: np.ndarray, bg: tuple) -> tuple[float, float]:
    """(tolerance, texture) of an image's colours.

    tolerance: how far apart two colours must be to count as two, in RGB units: twice what
    the border strays from the background colour (uneven lighting) or what neighbouring
    pixels differ by inside regions (sensor noise, compression), at least PEAK_SEPARATION.
    texture: the share of neighbouring pixels that differ a little; 0 for
    flat renders, anti-aliased or not.
    """
    d = np.linalg.norm(_border(image) - np.asarray(bg, np.float32), axis=1)
    d = d[d < 48]  # objects touching the border are not the background's noise
    step = np.abs(np.diff(image[::4].astype(np.int16), axis=1)).max(-1).ravel()
    step = step[step < 48]  # edges between regions are not noise
    spread = float(np.percentile(d, 90)) if d.size else 0.0
    grain = float(np.percentile(step, 97)) if step.size else 0.0
    return (max(PEAK_SEPARATION, 2 * spread, 2 * grain),
            float((step > 0).mean()) if step.size else 0.0)


def _bins(image: np.ndarray) -> np.ndarray:
    """Each pixel's 5-bit-per-channel colour bin, 0..32767."""
    q = image >> 3
    return (q[..., 0].astype(np.uint16) << 10) | (q[..., 1].astype(np.uint16) << 5) | q[..., 2]


def _palette(image: np.ndarray, bins: np.ndarray, bg: tuple, min_count: int, tol: float,
             textured: bool = False) -> tuple:
    """(palette, lut): the background and the peaks of the colour histogram, which are the
    image's flat colours, and the palette label of every colour bin.

    Colours closer than ``tol`` are one colour: uneven lighting, noise and compression
    shift the objects' colours as much as the background's.  A bin is
    labelled by the colour of its pixels, not its centre, so two flat colours a few
    units apart (a gray shape on a gray background) stay apart.
    """
    bins = bins.ravel()
    counts = np.bincount(bins, minlength=32 ** 3)
    occupied = np.nonzero(counts)[0]
    # Each bin's colour is one of its pixels' (the same for all of them in a flat region);
    # scattering the pixel indices backwards leaves each bin its first pixel.
    first = np.empty(32 ** 3, np.int64)
    first[bins[::-1]] = np.arange(bins.size - 1, -1, -1)
    means = image.reshape(-1, 3)[first[occupied]].astype(np.float32)
    order = np.argsort(-counts[occupied], kind="stable")
    cand = order[counts[occupied][order] >= min_count][:256]
    peaks = np.asarray([bg], np.float32)
    names = [None]
    colours = means[cand]
    colours = colours[np.sqrt(((colours - peaks[0]) ** 2).sum(1)) > tol]  # the background's shades
    for colour in colours:
        if len(peaks) > MAX_COLORS:
            break
        dist = np.sqrt(((peaks - colour) ** 2).sum(1))
        if dist.min() <= tol:
            continue
        # Noise and compression shift an object's colour further than ``tol`` in places
        # (JPEG's chroma bleeds): in a textured image, a shade of a colour already found
        # and near it is that colour.
        name = color_name(colour)
        if textured and any(n == name and d <= 3 * tol for n, d in zip(names, dist)):
            continue
        peaks = np.vstack([peaks, colour])
        names.append(name)
    # Only bins that occur get a label: crops hold the pixels of the image analysed.
    lut = np.zeros(32 ** 3, np.uint8)
    lut[occupied] = ((means[:, None] - peaks[None]) ** 2).sum(-1).argmin(1)
    return peaks, lut


def _cores(lab: np.ndarray, erode: int) -> np.ndarray:
    """Pixels whose 4-neighbours all carry their (non-background) label, eroded
    ``erode`` - 1 more times; outside the array counts as background, so an object
    filling a tight crop erodes exactly as it does in the full image."""
    keep = lab > 0
    keep[1:] &= lab[1:] == lab[:-1]
    keep[:-1] &= lab[:-1] == lab[1:]
    keep[:, 1:] &= lab[:, 1:] == lab[:, :-1]
    keep[:, :-1] &= lab[:, :-1] == lab[:, 1:]
    keep[0] = keep[-1] = False
    keep[:, 0] = keep[:, -1] = False
    if erode > 1:
        keep = ndimage.binary_erosion(keep, iterations=erode - 1, border_value=0)
    return keep


def analyse(image: np.ndarray, bg: tuple, ref: int, bins: np.ndarray | None = None) -> Scene:
    """What the whole image tells every crop of it (see ``Scene``)."""
    s = ref / REFERENCE_CANVAS
    tol, texture = noise(image, bg)
    bins = _bins(image) if bins is None else bins
    rough = tol > PEAK_SEPARATION or texture > 0.02
    palette, lut = _palette(image, bins, bg, max(4, int(round(6 * s))), tol, rough)
    if rough:
        # Not a flat render (lighting, sensor specks, compression; our renderer adds the
        # first two with its clutter strokes and dots): erode strokes away and keep only
        # cores of an object's size, as for our >= 24-px objects at 256 px: 2 px, 30
        # pixels 4 wide.
        return Scene(palette, lut, max(1, int(round(ERODE * s))), MIN_CORE * s * s, MIN_SIDE * s)
    # A flat image: whatever survives the 4-neighbour test is an object, however small;
    # erode less in scenes of small objects so that they keep a core.
    comp, n = ndimage.label(_cores(lut[bins], 1))
    largest = max((max(sl[0].stop - sl[0].start, sl[1].stop - sl[1].start)
                   for sl in ndimage.find_objects(comp)), default=0) + 2 if n else 0
    largest = largest or 2 * HALF_EXTENT["small"] * s
    erode = min(int(round(ERODE * s)), int(round(ERODE * largest / (2 * HALF_EXTENT["small"]))))
    return Scene(palette, lut, max(1, erode), 1, 1)


def _scene(view: View) -> Scene:
    return _SCENES.remember(view.digest,
                            lambda: analyse(view.root, background(view), min(view.root.shape[:2])))


def segment(image: np.ndarray, bg: tuple, ref: int, scene: Scene | None = None) -> tuple:
    """Components of ``image`` (HxWx3 uint8), boxes bottom-left origin in its pixels.

    ``scene`` is the analysis of the full image ``image`` was cropped from (its palette and
    scale); without it ``image`` is analysed alone.
    """
    h, w = image.shape[:2]
    if h == 0 or w == 0:
        return ()
    bins = _bins(image)
    scene = scene or analyse(image, bg, ref, bins)
    lab = scene.lut[bins]
    cores = _cores(lab, scene.erode)
    comp, n = ndimage.label(cores)
    if n == 0:
        return ()
    s = ref / REFERENCE_CANVAS
    out = []
    pad = scene.erode + 1
    square = np.ones((3, 3), bool)
    areas = np.bincount(comp.ravel(), minlength=n + 1)
    for k, sl in enumerate(ndimage.find_objects(comp), 1):
        if sl is None or areas[k] < scene.min_core or \
                min(sl[0].stop - sl[0].start, sl[1].stop - sl[1].start) < scene.min_side:
            continue  # specks: most components of a cluttered image
        inner = comp[sl] == k
        # Grow the core back to its full extent within its own colour: the pixels the
        # erosion took, corners included, but not a stroke of that colour leaving it.
        r0, r1 = max(0, sl[0].start - pad), min(h, sl[0].stop + pad)
        c0, c1 = max(0, sl[1].start - pad), min(w, sl[1].stop + pad)
        label = lab[sl][inner][0]
        mask = ndimage.binary_dilation(comp[r0:r1, c0:c1] == k, square, iterations=scene.erode,
                                       mask=lab[r0:r1, c0:c1] == label)
        rows, cols = np.nonzero(mask)
        full = mask[rows.min():rows.max() + 1, cols.min():cols.max() + 1]
        r0, r1, c0, c1 = r0 + rows.min(), r0 + rows.max() + 1, c0 + cols.min(), c0 + cols.max() + 1
        bh, bw = r1 - r0, c1 - c0
        if full.mean() < MIN_FILL:
            continue
        rgb = image[r0:r1, c0:c1][full].mean(0)
        size = "large" if max(bh, bw) >= SIZE_SPLIT * s else "small"
        # The eroded core keeps a polygon's corners sharp and drops what clutter stuck to
        # it, so it shows the shape best once it is big enough to show anything.
        shape = classify(inner if min(inner.shape) >= CORE_SIDE else full)
        out.append(Component(c0, h - r1, c1, h - r0, int(full.sum()), color_name(rgb), shape, size))
    out.sort(key=lambda c: (c.left, -c.upper))
    return tuple(out)


def _corner_fill(mask: np.ndarray) -> tuple:
    """Occupancy of the four corner windows (top-left, top-right, bottom-left,
    bottom-right): empty for a circle, full for a square, full only at the bottom for an
    upright triangle -- and, unlike the fill ratio, mostly unchanged when a neighbour
    bites off part of the shape."""
    h, w = mask.shape
    c = max(1, round(0.15 * min(h, w)))
    return (mask[:c, :c].mean(), mask[:c, -c:].mean(), mask[-c:, :c].mean(), mask[-c:, -c:].mean())


def _trim(mask: np.ndarray, frac: float = 0.015) -> np.ndarray:
    """Drop rows/columns holding the outermost ``frac`` of the pixels on each side, so a
    speck or stroke stuck to a shape does not stretch the box the features use."""
    def bounds(proj):
        cum = np.cumsum(proj)
        cut = frac * cum[-1]
        lo = int(np.searchsorted(cum, cut, side="right"))
        return lo, int(np.searchsorted(cum, cum[-1] - cut)) + 1
    r0, r1 = bounds(mask.sum(1))
    c0, c1 = bounds(mask.sum(0))
    return mask[r0:r1, c0:c1] if r1 - r0 >= 3 and c1 - c0 >= 3 else mask


def classify(mask: np.ndarray) -> str:
    """circle, square, rectangle or triangle, from a component's full mask."""
    mask = _trim(mask)
    h, w = mask.shape
    fill = mask.mean()
    tl, tr, bl, br = _corner_fill(mask)
    full = [v > 0.6 for v in (tl, tr, bl, br)]
    # A disc eroded by the diamond of the 4-neighbour erosion turns squarish, but none of
    # its corners fills: fill alone never makes a square.
    if sum(full) >= 3 or (fill >= SQUARE_FILL and any(full)):
        # One pixel of rounding is not a rectangle: a 6x7 box is a square.
        long, short = max(h, w), min(h, w)
        return "rectangle" if long >= RECTANGLE_ASPECT * short and long - short >= 2 else "square"
    if bl > 0.6 and br > 0.6 and tl < 0.25 and tr < 0.25:
        return "triangle"
    if max(tl, tr, bl, br) < 0.25 and fill >= CIRCLE_FILL:
        return "circle"
    rows = mask.sum(1)
    half = len(rows) // 2
    symmetry = rows[:half].sum() / max(rows[len(rows) - half:].sum(), 1)
    if fill < CIRCLE_FILL or symmetry < TRIANGLE_SYMMETRY:
        return "triangle"
    return "circle"


_WARM: list = []


class ShapesCV(Backend):
    name = "shapes-cv"

    def __init__(self):
        # The sandbox locks a worker down (no more imports) after building its first
        # namespace, so run the whole pipeline once now to pull in any lazy imports.
        if not _WARM:
            tile = np.full((24, 24, 3), 245, np.uint8)
            tile[6:18, 6:18] = (215, 35, 35)
            segment(tile, (245, 245, 245), 24)
            _WARM.append(True)

    def components(self, view: View) -> tuple:
        return _SEGMENTS.remember((view.digest, view.box), lambda: segment(
            view.image, background(view), min(view.root.shape[:2]), _scene(view)))

    def find(self, view: View, phrase: str) -> tuple:
        return tuple(c[:4] for c in answers.matching(self.components(view), phrase))

    def verify_property(self, view: View, object_name: str, prop: str) -> bool:
        return answers.verify(self.components(view), object_name, prop)

    def simple_query(self, view: View, question: str) -> str:
        return answers.simple_query(self.components(view), question, view.image.shape[:2])

    def match_score(self, view: View, text: str) -> float:
        return answers.match_score(self.components(view), text, view.image.shape[:2])

    def describe(self, view: View) -> str:
        return answers.describe(self.components(view))
